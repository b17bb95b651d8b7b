#include "kforge/core/child_process.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace kforge {
namespace {

using std::chrono::milliseconds;
using Clock = ChildProcess::Clock;

TEST(ChildProcessTest, InheritedDescriptorsArriveAt3And4) {
  int a[2], b[2];
  ASSERT_EQ(::pipe2(a, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(b, O_CLOEXEC), 0);
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "echo three >&3; echo four >&4; ls /proc/self/fd | wc -l"};
  spec.inherit_fds = {a[1], b[1]};
  auto child = ChildProcess::Start(spec);
  ASSERT_TRUE(child) << child.error().ToString();
  ::close(a[1]);
  ::close(b[1]);
  auto r = (*child)->WaitUntil(Clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, ProcessState::kDone);
  char buf[16] = {};
  EXPECT_EQ(::read(a[0], buf, sizeof(buf)), 6);
  EXPECT_STREQ(buf, "three\n");
  char buf2[16] = {};
  EXPECT_EQ(::read(b[0], buf2, sizeof(buf2)), 5);
  EXPECT_STREQ(buf2, "four\n");
  // 0, 1, 2, 3, 4 and the one ls opens for /proc/self/fd: nothing else leaked into the child.
  EXPECT_EQ(r->stdout_text, "6\n");
  ::close(a[0]);
  ::close(b[0]);
}

TEST(ChildProcessTest, RunsWhileTheCallerTalksToIt) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  ProcessSpec spec;
  // Echoes one message back (cat over a seqpacket socket keeps the boundary of one short write).
  spec.argv = {"sh", "-c", "head -c 5 <&3 >&3"};
  spec.inherit_fds = {sv[1]};
  auto child = ChildProcess::Start(spec);
  ASSERT_TRUE(child);
  ::close(sv[1]);
  EXPECT_TRUE((*child)->running());
  ASSERT_EQ(::send(sv[0], "hello", 5, 0), 5);
  char buf[8] = {};
  ASSERT_EQ(::recv(sv[0], buf, sizeof(buf), 0), 5);
  EXPECT_STREQ(buf, "hello");
  auto r = (*child)->WaitUntil(Clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, ProcessState::kDone);
  EXPECT_FALSE((*child)->running());
  ::close(sv[0]);
}

TEST(ChildProcessTest, WaitUntilReturnsNothingWhileItRuns) {
  ProcessSpec spec;
  spec.argv = {"sleep", "30"};
  auto child = ChildProcess::Start(spec);
  ASSERT_TRUE(child);
  EXPECT_FALSE((*child)->WaitUntil(Clock::now() + milliseconds(50)));
  const ProcessResult r = (*child)->Kill(/*timed_out=*/true);
  EXPECT_EQ(r.state, ProcessState::kTimedOut);
  EXPECT_EQ(r.term_signal, SIGKILL);
}

TEST(ChildProcessTest, DeadlineKillsTheWholeGroup) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "sleep 30 & sleep 30"};
  spec.timeout = milliseconds(200);
  const auto start = Clock::now();
  auto child = ChildProcess::Start(spec);
  ASSERT_TRUE(child);
  auto r = (*child)->WaitUntil(Clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, ProcessState::kTimedOut);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

TEST(ChildProcessTest, SignalGoesToTheGroup) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "sleep 30"};
  auto child = ChildProcess::Start(spec);
  ASSERT_TRUE(child);
  EXPECT_EQ((*child)->pgid(), (*child)->pid());
  EXPECT_TRUE((*child)->SignalGroup(SIGTERM));
  auto r = (*child)->WaitUntil(Clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, ProcessState::kFailed);
  EXPECT_EQ(r->term_signal, SIGTERM);
}

TEST(ChildProcessTest, MissingProgramIsAnErrorThatNamesIt) {
  ProcessSpec spec;
  spec.argv = {"/nonexistent/kforge-harness"};
  auto child = ChildProcess::Start(spec);
  ASSERT_FALSE(child);
  EXPECT_NE(child.error().message.find("/nonexistent/kforge-harness"), std::string::npos);
}

// The child outlives the thread that started it: the death signal follows the forking thread,
// and every child is forked by one long-lived thread.
TEST(ChildProcessTest, OutlivesTheThreadThatStartedIt) {
  std::unique_ptr<ChildProcess> child;
  std::thread([&] {
    ProcessSpec spec;
    spec.argv = {"sleep", "30"};
    auto started = ChildProcess::Start(spec);
    ASSERT_TRUE(started);
    child = std::move(*started);
  }).join();
  ASSERT_TRUE(child);
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_TRUE(child->running());
}

TEST(ChildProcessTest, StderrIsCapturedWhileItRuns) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "echo early >&2; sleep 30"};
  auto child = ChildProcess::Start(spec);
  ASSERT_TRUE(child);
  for (int i = 0; i < 200 && (*child)->StderrSoFar().empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ((*child)->StderrSoFar(), "early\n");
}

}  // namespace
}  // namespace kforge
