#include "kforge/core/load_monitor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace kforge {
namespace {

using namespace std::chrono_literals;

// A child that spins on one core until killed.
pid_t StartBurner() {
  pid_t pid = ::fork();
  if (pid == 0) {
    volatile unsigned long x = 0;
    for (;;) x = x + 1;
  }
  return pid;
}

void Stop(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

// The host's own background over `window`: what another test on a busy machine would see.
double Background(std::chrono::milliseconds window) {
  LoadMonitor quiet({}, "");
  std::this_thread::sleep_for(window);
  return quiet.Finish().other_cpu_cores;
}

TEST(LoadMonitorTest, TheEvaluationsOwnProcessesAreNotLoad) {
  const double background = Background(500ms);
  pid_t own = StartBurner();
  ASSERT_GT(own, 0);
  LoadMonitor monitor({own}, "");
  std::this_thread::sleep_for(1000ms);
  LoadReading r = monitor.Finish();
  Stop(own);
  EXPECT_GT(r.own_cpu_cores, 0.3) << r.Describe();
  // What is left is the host's background, not the burner (within a generous margin: the
  // machine running the tests may be shared).
  EXPECT_LT(r.other_cpu_cores, background + 0.5) << r.Describe();
  EXPECT_GE(r.host_cpus, 1);
  EXPECT_NEAR(r.window_seconds, 1.0, 0.5);
}

TEST(LoadMonitorTest, ACompetingProcessIsLoadAndFlagsTheWindow) {
  const double background = Background(500ms);
  // A burner adds a core only where one is free: on a host whose cores the background already
  // fills, the competition cannot show (the reading is the host's, not this test's).
  const double cpus = static_cast<double>(std::thread::hardware_concurrency());
  if (background > cpus - 0.6) {
    GTEST_SKIP() << "the host's other processes already use " << background << " of " << cpus
                 << " cores: no free core for the competing process to show on";
  }
  pid_t other = StartBurner();
  ASSERT_GT(other, 0);
  LoadMonitor monitor({}, "");
  std::this_thread::sleep_for(1000ms);
  LoadReading r = monitor.Finish();
  Stop(other);
  EXPECT_GT(r.other_cpu_cores, background + 0.3) << r.Describe();
  EXPECT_TRUE(r.busy) << r.Describe();
  ASSERT_FALSE(r.reasons.empty());
  EXPECT_NE(r.reasons.front().find("other processes used"), std::string::npos);
}

TEST(LoadMonitorTest, OwnCpuTimeOfEndedProcessesComesFromTheCaller) {
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  LoadMonitor monitor({child}, "");
  Stop(child);
  LoadReading r = monitor.Finish({{child, 2.0}});  // it ran 2 s of CPU in the window
  EXPECT_GT(r.own_cpu_cores, 1.0);
  EXPECT_GE(r.other_cpu_cores, 0.0);
}

TEST(LoadMonitorTest, CudaDeviceWithoutNvmlSaysWhy) {
  LoadMonitor monitor({}, "cuda:0");
  LoadReading r = monitor.Finish();
  EXPECT_EQ(r.device, "cuda:0");
  if (!r.device_measured) {
    EXPECT_FALSE(r.device_note.empty());
    EXPECT_NE(r.Describe().find("not measured"), std::string::npos) << r.Describe();
  }
}

}  // namespace
}  // namespace kforge
