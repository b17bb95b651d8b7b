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
