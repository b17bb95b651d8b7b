// The compiler in the sandbox (src/eval/compile_service.h, toolchain_view.h): an honest compile
// works on every toolchain present here; `#include` and `.incbin` of a canary outside the
// compiler's view fail, and the canary appears nowhere (artifact, log, diagnostics); the
// compile's environment holds none of KForge's; its /tmp is size-limited.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "fixture_cases.h"
#include "kforge/core/files.h"
#include "kforge/core/sandbox.h"
#include "kforge/eval/compile_service.h"
#include "kforge/target/backend.h"
#include "toolchain_view.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = testing::SourceTree() / "tests" / "fixtures";

struct Toolchain {
  std::string target;
  std::string ext;
};

std::string RandomTag() {
  std::random_device device;
  return fmt::format("{:08x}{:08x}", device(), device());
}

class CompileSandboxTest : public ::testing::TestWithParam<Toolchain> {
 protected:
  void SetUp() override {
    if (DefaultSandbox()->isolation({}).mechanism != "bubblewrap") {
      GTEST_SKIP() << "bubblewrap is not available here: compiles run without a sandbox";
    }
    backend_ = NewBackend(*Target::Parse(GetParam().target));
    if (!backend_->Probe().toolchain) GTEST_SKIP() << GetParam().target << ": no compiler here";
    work_ = fs::temp_directory_path() / fmt::format("kforge-compile-sandbox-{}", ::getpid());
    fs::create_directories(work_);
    options_.cache_dir = work_ / "cache";
    options_.build_root = fs::temp_directory_path() / fmt::format("kforge-{}", ::geteuid()) /
                          fmt::format("builds-test-{}", ::getpid());
    tag_ = "KFORGE-CANARY-" + RandomTag();
  }
  void TearDown() override {
    std::error_code ec;
    if (!work_.empty()) fs::remove_all(work_, ec);
    fs::remove_all(options_.build_root, ec);
    for (const auto& p : cleanup_) fs::remove_all(p, ec);
  }

  // A canary file holding `tag_` as an includable C declaration.
  fs::path Canary(const fs::path& where, fs::perms mode) {
    fs::create_directories(where.parent_path());
    {
      std::ofstream(where) << fmt::format("static const char kforge_canary[] = \"{}\";\n", tag_);
    }
    fs::permissions(where, mode);
    cleanup_.push_back(where);
    return where;
  }

  // The fixture `name` with @PATH@ replaced, written as a candidate file.
  fs::path Candidate(const std::string& name, const fs::path& path = {}) {
    auto text = ReadFile(kFixtures / "redteam" / "compile" / name);
    EXPECT_TRUE(text) << name;
    std::string source = *text;
    for (auto at = source.find("@PATH@"); at != std::string::npos; at = source.find("@PATH@")) {
      source.replace(at, 6, path.string());
    }
    const fs::path file = work_ / (RandomTag() + "-" + name);
    EXPECT_TRUE(WriteFile(file, source));
    return file;
  }

  // The canary must be in nothing the compile produced.
  void ExpectNoCanary(const CompileOutcome& outcome) {
    EXPECT_EQ(outcome.full_log.find(tag_), std::string::npos) << outcome.full_log;
    EXPECT_EQ(outcome.diagnostics.find(tag_), std::string::npos) << outcome.diagnostics;
    if (outcome.ok) {
      auto bytes = ReadFile(outcome.artifact);
      ASSERT_TRUE(bytes);
      EXPECT_EQ(bytes->find(tag_), std::string::npos) << "the canary is in the shared object";
    }
  }

  std::unique_ptr<Backend> backend_;
  CompileServiceOptions options_;
  fs::path work_;
  std::string tag_;
  std::vector<fs::path> cleanup_;
};

TEST_P(CompileSandboxTest, HonestCandidateCompiles) {
  CompileService compiler(options_);
  auto outcome =
      compiler.Compile(*backend_, kFixtures / "candidates" / "relu" / ("honest" + GetParam().ext));
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_TRUE(outcome->ok) << outcome->full_log;
  EXPECT_NE(outcome->isolation.find("only the listed paths of the host shown"), std::string::npos)
      << outcome->isolation;
  if (::geteuid() == 0) {
    EXPECT_NE(outcome->isolation.find("unprivileged user"), std::string::npos);
  }
}

TEST_P(CompileSandboxTest, FilesOutsideTheViewCannotBeIncludedOrEmbedded) {
  // A world-readable file under a folder the view does not show, and (as root) a root-only one.
  std::vector<fs::path> canaries = {
      Canary(fs::path("/var/tmp") / fmt::format("kforge-canary-{}", ::getpid()) / "readable.h",
             fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                 fs::perms::others_read)};
  cleanup_.push_back(canaries[0].parent_path());
  if (::geteuid() == 0) {
    canaries.push_back(Canary(fs::path("/root") / fmt::format(".kforge-canary-{}.h", ::getpid()),
                              fs::perms::owner_read | fs::perms::owner_write));
  }
  CompileService compiler(options_);
  for (const auto& canary : canaries) {
    for (const std::string kind : {"include_file", "incbin_file"}) {
      SCOPED_TRACE(kind + " of " + canary.string());
      auto outcome = compiler.Compile(*backend_, Candidate(kind + GetParam().ext, canary));
      ASSERT_TRUE(outcome) << outcome.error().message;
      EXPECT_FALSE(outcome->ok) << "the compile read " << canary;
      ExpectNoCanary(*outcome);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Toolchains, CompileSandboxTest,
                         ::testing::Values(Toolchain{"cpu/cpp", ".cpp"},
                                           Toolchain{"nvidia/cuda", ".cu"},
                                           Toolchain{"amd/hip", ".hip"}),
                         [](const auto& test_info) {
                           return std::string(test_info.param.ext.substr(1));
                         });

class CompileSandboxCppTest : public CompileSandboxTest {};

TEST_P(CompileSandboxCppTest, CompilerEnvironmentHoldsNoSecret) {
  ::setenv("KFORGE_TEST_SECRET_KEY", tag_.c_str(), 1);
  CompileService compiler(options_);
  auto outcome = compiler.Compile(*backend_, Candidate("incbin_environ.cpp"));
  ::unsetenv("KFORGE_TEST_SECRET_KEY");
  ASSERT_TRUE(outcome) << outcome.error().message;
  ASSERT_TRUE(outcome->ok) << outcome->full_log;  // /proc/self/environ exists in the sandbox
  ExpectNoCanary(*outcome);
  auto bytes = ReadFile(outcome->artifact);
  ASSERT_TRUE(bytes);
  if (bytes->find("LC_ALL=C") == std::string::npos) {
    // GNU as sizes an .incbin by the file's stat size, which procfs reports as 0: this assembler
    // embeds nothing of /proc/self/environ, so the route carries no secret here at all.
    GTEST_SKIP() << "this assembler embedded nothing of /proc/self/environ (size 0 in procfs)";
  }
}

TEST_P(CompileSandboxCppTest, PrivateTmpIsSizeLimited) {
  SandboxPolicy sized;
  sized.tmp_bytes = 1;
  if (DefaultSandbox()->isolation(sized).tmp_bytes == 0) {
    GTEST_SKIP() << "this bubblewrap cannot size a tmpfs";
  }
  options_.tmp_bytes = 32ull << 20;
  CompileService compiler(options_);
  auto outcome = compiler.Compile(*backend_, Candidate("incbin_zero.cpp"));
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_FALSE(outcome->ok);
  // Either the assembler fills the private /tmp and stops at its size, or it refuses to read a
  // device at all; neither lets the compile write past the limit.
  EXPECT_TRUE(outcome->full_log.find("No space left") != std::string::npos ||
              outcome->full_log.find("unable to include `/dev/zero'") != std::string::npos)
      << outcome->full_log;
}

INSTANTIATE_TEST_SUITE_P(Cpp, CompileSandboxCppTest,
                         ::testing::Values(Toolchain{"cpu/cpp", ".cpp"}));

TEST(ToolchainViewTest, PrivatePlacesAreNeverShown) {
  for (const char* p : {"/", "/etc", "/etc/shadow", "/root/.ssh/id_rsa", "/home/u/.config",
                        "/var/tmp/x", "/proc/self/environ", "/tmp/x"}) {
    EXPECT_TRUE(IsPrivateHostPath(p, {})) << p;
  }
  for (const char* p : {"/usr/include", "/usr/lib/x86_64-linux-gnu", "/etc/ld.so.cache",
                        "/opt/rocm/bin"}) {
    EXPECT_FALSE(IsPrivateHostPath(p, {})) << p;
  }
  // A toolkit installed under a private place stays usable.
  EXPECT_FALSE(IsPrivateHostPath("/home/u/cuda/include", "/home/u/cuda"));
  EXPECT_TRUE(IsPrivateHostPath("/home/u/.ssh", "/home/u/cuda"));
}

}  // namespace
}  // namespace kforge
