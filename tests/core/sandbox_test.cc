#include "kforge/core/sandbox.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace kforge {
namespace {

namespace fs = std::filesystem;

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sandbox_ = DefaultSandbox();
    if (sandbox_->isolation({}).mechanism != "bubblewrap") {
      GTEST_SKIP() << "bubblewrap is not available here; the sandbox runs with limits only";
    }
    scratch_ = fs::temp_directory_path() / fmt::format("kforge-sandbox-test-{}", ::getpid());
    fs::create_directories(scratch_);
    fs::permissions(scratch_, fs::perms::all);
  }
  void TearDown() override {
    if (!scratch_.empty()) fs::remove_all(scratch_);
  }
  ProcessResult Run(const std::string& script, SandboxPolicy policy) {
    ProcessSpec spec;
    spec.argv = {"sh", "-c", script};
    spec.timeout = std::chrono::seconds(20);
    auto r = RunProcess(sandbox_->Wrap(spec, policy));
    EXPECT_TRUE(r);
    return *r;
  }
  SandboxPolicy Policy() const {
    SandboxPolicy policy;
    policy.scratch_dir = scratch_;
    return policy;
  }
  std::shared_ptr<const Sandbox> sandbox_;
  fs::path scratch_;
};

TEST_F(SandboxTest, ScratchIsWritableRestIsNot) {
  SandboxPolicy policy = Policy();
  auto r = Run("echo x > $TMPDIR/ok && echo x > /usr/kforge-escape; echo rc=$?", policy);
  EXPECT_TRUE(fs::exists(scratch_ / "ok"));
  EXPECT_FALSE(fs::exists("/usr/kforge-escape"));
  EXPECT_EQ(r.stdout_text.find("rc=0"), std::string::npos) << r.stdout_text << r.stderr_text;
}

TEST_F(SandboxTest, NoNetwork) {
  SandboxPolicy policy = Policy();
  auto r = Run("cat /proc/net/dev | grep -c ':'", policy);
  EXPECT_EQ(r.stdout_text, "1\n");  // loopback only
}

TEST_F(SandboxTest, HiddenPathsAreEmpty) {
  fs::path secret = scratch_.parent_path() / fmt::format("kforge-secret-{}", ::getpid());
  fs::create_directories(secret);
  { std::ofstream(secret / "answer") << "42"; }
  SandboxPolicy policy = Policy();
  policy.hidden_paths = {secret};
  auto r = Run(fmt::format("ls {} | wc -l", secret.string()), policy);
  EXPECT_EQ(r.stdout_text, "0\n");
  fs::remove_all(secret);
}

TEST_F(SandboxTest, RunsAsNobodyWhenRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root: no user switch to test";
  SandboxPolicy policy = Policy();
  auto r = Run("id -u", policy);
  EXPECT_EQ(r.stdout_text, "65534\n");
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

TEST_F(SandboxTest, ChildKilledBySignalIsReportedAsThatSignal) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "kill -SEGV $$"};
  spec.timeout = std::chrono::seconds(20);
  auto r = RunProcess(sandbox_->Wrap(spec, Policy()));
  ASSERT_TRUE(r);
  sandbox_->UnwrapResult(*r);
  EXPECT_EQ(r->term_signal, SIGSEGV) << "exit code " << r->exit_code;
  EXPECT_EQ(r->state, ProcessState::kFailed);
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

// The restricted view: what a compiler gets (an empty root with only the listed paths).
SandboxPolicy ShellView(const fs::path& scratch) {
  SandboxPolicy policy;
  policy.scratch_dir = scratch;
  policy.show_host_root = false;
  // A shell and coreutils, named as the host names them (/bin and /lib are links on merged-/usr
  // systems: the view recreates them).
  policy.visible_paths = {"/bin/sh", "/usr/bin", "/lib", "/lib64", "/usr/lib"};
  return policy;
}

TEST_F(SandboxTest, RestrictedViewShowsOnlyTheListedPaths) {
  fs::path outside = fs::path("/var/tmp") / fmt::format("kforge-view-test-{}", ::getpid());
  fs::create_directories(outside);
  fs::permissions(outside, fs::perms::all);
  { std::ofstream(outside / "visible-on-the-host") << "secret"; }
  fs::permissions(outside / "visible-on-the-host", fs::perms::all);
  auto r = Run(fmt::format("ls /; test -e /etc/passwd && echo passwd; test -e {0}/visible-on-the-host "
                           "&& echo outside; echo x > /kforge-root-write && echo rootwrite; "
                           "echo ok > $TMPDIR/here && cat $TMPDIR/here",
                           outside.string()),
               ShellView(scratch_));
  fs::remove_all(outside);
  EXPECT_EQ(r.stdout_text.find("passwd"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("outside"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("rootwrite"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("ok"), std::string::npos) << r.stdout_text << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find("root\n"), std::string::npos) << "the host's /root is shown";
  EXPECT_EQ(r.stdout_text.find("home\n"), std::string::npos) << "the host's /home is shown";
  EXPECT_TRUE(sandbox_->isolation(ShellView(scratch_)).restricted_view);
}

TEST_F(SandboxTest, RestrictedViewRecreatesSymlinksOnTheWay) {
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status("/lib", ec))) GTEST_SKIP() << "/lib is not a link here";
  auto r = Run("readlink /lib; test -e /lib/x86_64-linux-gnu/libc.so.6 && echo libc || "
               "ls /lib/",
               ShellView(scratch_));
  EXPECT_EQ(r.stdout_text.substr(0, r.stdout_text.find('\n')), fs::read_symlink("/lib").string())
      << r.stdout_text << r.stderr_text;
}

TEST_F(SandboxTest, PrivateTmpAndShmHaveTheirSizeLimits) {
  SandboxPolicy policy = Policy();
  policy.tmp_bytes = 8ull << 20;
  policy.shm_bytes = 4ull << 20;
  if (sandbox_->isolation(policy).tmp_bytes == 0) {
    GTEST_SKIP() << "this bubblewrap cannot size a tmpfs (--size needs 0.6)";
  }
  auto r = Run("dd if=/dev/zero of=/tmp/big bs=1M count=16 2>/dev/null; echo tmp=$?; "
               "dd if=/dev/zero of=/dev/shm/big bs=1M count=8 2>/dev/null; echo shm=$?; "
               "rm -f /tmp/big; dd if=/dev/zero of=/tmp/small bs=1M count=2 2>/dev/null; echo small=$?",
               policy);
  EXPECT_NE(r.stdout_text.find("tmp=1"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("shm=1"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("small=1"), std::string::npos) << r.stdout_text;
  EXPECT_NE(sandbox_->isolation(policy).Describe().find("/tmp 8 MiB"), std::string::npos);
}

}  // namespace
}  // namespace kforge
