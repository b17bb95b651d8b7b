#include "kforge/core/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace kforge {
namespace {

using std::chrono::milliseconds;

TEST(SubprocessTest, CapturesOutputAndExitCode) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"};
  auto r = RunProcess(spec);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->state, ProcessState::kFailed);
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->stdout_text, "out\n");
  EXPECT_EQ(r->stderr_text, "err\n");
}

TEST(SubprocessTest, ResultPipeIsFd3) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "echo '{\"ok\":1}' >&3; echo noise"};
  spec.result_pipe = true;
  auto r = RunProcess(spec);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, ProcessState::kDone);
  EXPECT_EQ(r->result_text, "{\"ok\":1}\n");
  EXPECT_EQ(r->stdout_text, "noise\n");
}

TEST(SubprocessTest, StdinDataReachesTheChildThenEndOfFile) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "read line; echo \"got $line\"; cat; echo end"};
  spec.stdin_data = "secret\n";
  auto r = RunProcess(spec);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stdout_text, "got secret\nend\n");
}

TEST(SubprocessTest, StdinIsDevNullByDefault) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "cat; echo end"};
  auto r = RunProcess(spec);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stdout_text, "end\n");
}

TEST(SubprocessTest, TimeoutKillsWholeProcessGroup) {
  ProcessSpec spec;
  // A background grandchild holding the pipes must not keep us waiting.
  spec.argv = {"sh", "-c", "sleep 30 & sleep 30"};
  spec.timeout = milliseconds(300);
  auto r = RunProcess(spec);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, ProcessState::kTimedOut);
  EXPECT_EQ(r->term_signal, SIGKILL);
  EXPECT_LT(r->wall_seconds, 5.0);
}

TEST(SubprocessTest, LeftoverBackgroundProcessDoesNotBlock) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "sleep 30 & echo done"};
  auto r = RunProcess(spec);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, ProcessState::kDone);
  EXPECT_LT(r->wall_seconds, 5.0);
}

TEST(SubprocessTest, SignalIsRecorded) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "kill -SEGV $$"};
  auto r = RunProcess(spec);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, ProcessState::kFailed);
  EXPECT_EQ(r->term_signal, SIGSEGV);
}

TEST(SubprocessTest, MissingProgramIsAnError) {
  ProcessSpec spec;
  spec.argv = {"/nonexistent/kforge-no-such-program"};
  auto r = RunProcess(spec);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cannot start"), std::string::npos);
}

// As another user, a program behind a private folder cannot be started; the error says why.
TEST(SubprocessTest, PermissionDeniedAfterAUserSwitchNamesTheUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch users";
  char dir_template[] = "/tmp/kforge-private-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;  // mode 0700: private to root
  const std::string program = dir + "/hello.sh";
  {
    std::FILE* f = std::fopen(program.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("#!/bin/sh\necho hello\n", f);
    std::fclose(f);
  }
  ::chmod(program.c_str(), 0755);
  ProcessSpec spec;
  spec.argv = {program};
  spec.uid = 65534;
  spec.gid = 65534;
  auto r = RunProcess(spec);
  std::remove(program.c_str());
  ::rmdir(dir.c_str());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("Permission denied"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("runs as uid 65534"), std::string::npos) << r.error().message;
}

TEST(SubprocessTest, OutputIsBounded) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x"};
  spec.max_output_bytes = 1000;
  auto r = RunProcess(spec);
  ASSERT_TRUE(r);
  EXPECT_LT(r->stdout_text.size(), 1100u);
  EXPECT_NE(r->stdout_text.find("bytes cut"), std::string::npos);
}

TEST(SubprocessTest, AddressSpaceLimitApplies) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "ulimit -v"};
  spec.limits.address_space_bytes = 512ull << 20;
  auto r = RunProcess(spec);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stdout_text, "524288\n");
}

TEST(SubprocessTest, StopTokenCancels) {
  std::stop_source source;
  ProcessSpec spec;
  spec.argv = {"sleep", "30"};
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(200));
    source.request_stop();
  });
  auto r = RunProcess(spec, source.get_token());
  canceller.join();
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->cancelled);
  EXPECT_EQ(r->state, ProcessState::kTimedOut);
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

TEST(SubprocessTest, MovableDeadline) {
  ProcessSpec spec;
  spec.argv = {"sleep", "30"};
  spec.deadline = std::make_shared<std::atomic<std::int64_t>>(0);
  std::thread mover([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto soon = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    spec.deadline->store(std::chrono::nanoseconds(soon.time_since_epoch()).count());
  });
  auto r = RunProcess(spec);
  mover.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, ProcessState::kTimedOut);
  EXPECT_FALSE(r->cancelled);
  EXPECT_LT(r->wall_seconds, 5.0);
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

// A folder quota (ProcessSpec::folder_quota): the child is stopped once its folder holds more.
TEST(SubprocessTest, FolderOverItsQuotaStopsTheChild) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kforge-quota-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto quota = std::make_shared<FolderQuota>();
  quota->folder = dir;
  quota->max_bytes = 8ull << 20;
  ProcessSpec spec;
  // 64 MiB in 1 MiB writes, slowly enough that the walk sees it pass 8 MiB.
  spec.argv = {"sh", "-c",
               "for i in $(seq 64); do dd if=/dev/zero bs=1M count=1 2>/dev/null >> " +
                   (dir / "fill").string() + "; sleep 0.02; done; echo finished"};
  spec.timeout = std::chrono::seconds(60);
  spec.folder_quota = quota;
  spec.running_pid = std::make_shared<std::atomic<pid_t>>(0);
  auto r = RunProcess(spec);
  const auto left = std::filesystem::file_size(dir / "fill");
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stdout_text.find("finished"), std::string::npos) << "the child was not stopped";
  EXPECT_NE(r->limit_exceeded.find("more than its quota of 8.0 MiB"), std::string::npos)
      << r->limit_exceeded;
  EXPECT_EQ(r->state, ProcessState::kFailed);
  EXPECT_LT(left, 32ull << 20);
  EXPECT_EQ(spec.running_pid->load(), 0) << "the pid is cleared once the child is reaped";
}

TEST(SubprocessTest, FolderWithinItsQuotaIsLeftAlone) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kforge-quota-ok-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto quota = std::make_shared<FolderQuota>();
  quota->folder = dir;
  quota->max_bytes = 64ull << 20;
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "dd if=/dev/zero of=" + (dir / "small").string() +
                               " bs=1M count=2 2>/dev/null; sleep 0.3; echo finished"};
  spec.folder_quota = quota;
  auto r = RunProcess(spec);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, ProcessState::kDone);
  EXPECT_TRUE(r->limit_exceeded.empty());
  EXPECT_NE(r->stdout_text.find("finished"), std::string::npos);
}

}  // namespace
}  // namespace kforge
