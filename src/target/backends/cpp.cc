// cpu/cpp: host C++ (OpenMP allowed) compiled by g++ into a shared object exporting kforge_forward.
#include <fmt/format.h>

#include "formats.h"
#include "kforge/core/subprocess.h"
#include "kforge/target/backend.h"
#include "kforge/target/probe.h"

namespace kforge {
namespace {

std::string Compiler(const Env& env) {
  if (auto cxx = env.GetVar("CXX"); cxx && !cxx->empty()) return env.FindProgram(*cxx);
  return env.FindProgram("g++");
}

class CppBackend : public Backend {
 public:
  CppBackend(Target target, const Env& env)
      : target_(std::move(target)),
        env_(env),
        traits_{.title = "C++ with OpenMP",
                .format = backends::NativeFormat(ProgrammingModel::kCpp, "kernel.cpp", "cpp",
                                                 {".cpp", ".cc"}, {}),
                .kernelbench_compat = true,
                .stream = StreamHandle::kNone,
                .templates = "cpp",
                .profilers = {"torch"},
                .static_rules = {}} {}

  const Target& target() const override { return target_; }
  const ModelTraits& traits() const override { return traits_; }
  std::string RunnerDevice() const override { return "cpu"; }

  Availability Probe() const override {
    Availability a;
    std::string cxx = Compiler(env_);
    if (cxx.empty()) {
      a.missing.push_back("g++ not found: apt-get install g++ (or set CXX)");
    } else {
      a.toolchain = true;
      a.toolchain_version = ProgramVersion(cxx, {"--version"}, env_);
    }
    if (RunnerPython().empty()) {
      a.missing.push_back(
          "no Python with torch for the runner: apt-get install python3-torch (or set "
          "KFORGE_PYTHON)");
    } else {
      a.device = true;  // the host CPU
    }
    return a;
  }

  Result<CompileCommand> NativeCompile(const std::filesystem::path& source,
                                       const std::filesystem::path& output,
                                       const std::filesystem::path& abi_include_dir) const override {
    std::string cxx = Compiler(env_);
    if (cxx.empty()) return Unavailable("g++ not found: apt-get install g++ (or set CXX)");
    // -march=native: candidates are timed on this machine; the cache key includes the CPU model.
    CompileCommand cmd;
    cmd.argv = {cxx,      "-O3",         "-march=native", "-std=c++17", "-fopenmp",
                "-shared", "-fPIC",      "-I",            abi_include_dir.string(),
                "-o",     output.string(), source.string()};
    return cmd;
  }

  bool UsesAccelerator() const override { return false; }

 private:
  Target target_;
  const Env& env_;
  ModelTraits traits_;
};

}  // namespace

std::unique_ptr<Backend> NewCppBackend(const Target& target, const Env& env) {
  return std::make_unique<CppBackend>(target, env);
}

}  // namespace kforge
