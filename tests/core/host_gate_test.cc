#include "kforge/core/host_gate.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include <fmt/format.h>

namespace kforge {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class HostGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = fs::temp_directory_path() / fmt::format("kforge-gate-test-{}-{}", ::getpid(),
                                                    ::testing::UnitTest::GetInstance()
                                                        ->current_test_info()
                                                        ->name());
    fs::remove(file_);
  }
  void TearDown() override { fs::remove(file_); }

  fs::path file_;
};

TEST_F(HostGateTest, CompilesShareTheGate) {
  HostGate gate(file_);
  auto a = gate.Compile();
  ASSERT_TRUE(a) << a.error().message;
  auto b = std::async(std::launch::async, [&] { return gate.Compile(); });
  ASSERT_EQ(b.wait_for(2s), std::future_status::ready);
  EXPECT_TRUE(b.get());
}

TEST_F(HostGateTest, CpuTimingWaitsForRunningCompileAndExcludesNewOnes) {
  HostGate gate(file_);
  auto compile = gate.Compile();
  ASSERT_TRUE(compile);
  std::atomic<bool> timed{false};
  auto timing = std::async(std::launch::async, [&] {
    auto lease = gate.Timing("cpu");
    timed = true;
    std::this_thread::sleep_for(200ms);
    return lease.has_value();
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(timed) << "a timing started while a compile ran";
  // A compile arriving now waits behind the waiting timing (timings are not starved).
  auto late_compile = std::async(std::launch::async, [&] {
    auto lease = gate.Compile();
    return timed.load();
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(late_compile.wait_for(0ms), std::future_status::timeout);
  compile = HostGate::Lease();  // the running compile ends
  EXPECT_TRUE(timing.get());
  EXPECT_TRUE(late_compile.get()) << "the late compile ran before the timing";
}

TEST_F(HostGateTest, CpuTimingExcludesOtherTimings) {
  HostGate gate(file_);
  auto timing = gate.Timing("cpu");
  ASSERT_TRUE(timing);
  std::stop_source stop;
  auto other = std::async(std::launch::async, [&] { return gate.Timing("cuda:0", stop.get_token()); });
  EXPECT_EQ(other.wait_for(150ms), std::future_status::timeout);
  stop.request_stop();
  auto r = other.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kCancelled);
}

TEST_F(HostGateTest, DeviceTimingsOnOtherDevicesRunTogetherButNotOnTheSameDevice) {
  HostGate gate(file_);
  auto gpu0 = gate.Timing("cuda:0");
  ASSERT_TRUE(gpu0);
  auto gpu1 = std::async(std::launch::async, [&] { return gate.Timing("cuda:1"); });
  ASSERT_EQ(gpu1.wait_for(2s), std::future_status::ready);
  EXPECT_TRUE(gpu1.get());
  std::stop_source stop;
  auto same = std::async(std::launch::async, [&] { return gate.Timing("cuda:0", stop.get_token()); });
  EXPECT_EQ(same.wait_for(150ms), std::future_status::timeout);
  auto compile = std::async(std::launch::async, [&] { return gate.Compile(stop.get_token()); });
  EXPECT_EQ(compile.wait_for(150ms), std::future_status::timeout);
  stop.request_stop();
  EXPECT_FALSE(same.get());
  EXPECT_FALSE(compile.get());
}

TEST_F(HostGateTest, HoldsAcrossProcessesAndIsReleasedWhenTheHolderDies) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    HostGate gate(file_);
    auto lease = gate.Timing("cpu");
    char c = lease ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();  // killed below while holding the lease
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  HostGate gate(file_);
  auto compile = std::async(std::launch::async, [&] { return gate.Compile(); });
  EXPECT_EQ(compile.wait_for(200ms), std::future_status::timeout)
      << "a compile started while another process timed";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_EQ(compile.wait_for(5s), std::future_status::ready);
  auto lease = compile.get();
  ASSERT_TRUE(lease);
  EXPECT_GT(lease->waited_seconds(), 0.1);
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST_F(HostGateTest, TurnedOffGrantsAtOnce) {
  HostGate gate("");
  EXPECT_FALSE(gate.enabled());
  auto t = gate.Timing("cpu");
  auto c = gate.Compile();
  EXPECT_TRUE(t && c);
}

}  // namespace
}  // namespace kforge
