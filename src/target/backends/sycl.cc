// intel/sycl: SYCL C++ compiled by icpx (oneAPI) or acpp (AdaptiveCpp) into a shared object
// exporting kforge_forward; `stream` is a sycl::queue*.
#include <fmt/format.h>
#include <unistd.h>

#include "formats.h"
#include "kforge/core/subprocess.h"
#include "kforge/target/backend.h"
#include "kforge/target/probe.h"

namespace kforge {
namespace {

class SyclBackend : public Backend {
 public:
  SyclBackend(Target target, const Env& env)
      : target_(std::move(target)),
        env_(env),
        traits_{.title = "SYCL 2020 C++",
                .format = backends::NativeFormat(ProgrammingModel::kSycl, "kernel.cpp", "cpp",
                                                 {".cpp", ".sycl"}, {"sycl"}),
                .kernelbench_compat = true,
                .stream = StreamHandle::kSyclQueue,
                .templates = "sycl",
                .profilers = {"torch"},
                .static_rules = {}} {}

  const Target& target() const override { return target_; }
  const ModelTraits& traits() const override { return traits_; }
  std::string RunnerDevice() const override { return "xpu:0"; }

  Availability Probe() const override {
    Availability a;
    std::string icpx = env_.FindProgram("icpx");
    std::string acpp = env_.FindProgram("acpp");
    if (icpx.empty() && acpp.empty()) {
      a.missing.push_back(
          "no SYCL compiler: install Intel oneAPI (icpx) or AdaptiveCpp (acpp) and put it on PATH");
    } else {
      a.toolchain = true;
      a.toolchain_version = ProgramVersion(icpx.empty() ? acpp : icpx, {"--version"}, env_);
    }
    if (env_.FindProgram("sycl-ls").empty() || !env_.Exists("/dev/dri")) {
      a.missing.push_back("no Intel GPU visible to SYCL: /dev/dri and sycl-ls (oneAPI) needed");
    } else if (PythonModuleVersion("torch").empty()) {
      a.missing.push_back("the runner's Python has no torch with XPU support");
    } else {
      a.device = true;
    }
    return a;
  }

  Result<CompileCommand> NativeCompile(const std::filesystem::path& source,
                                       const std::filesystem::path& output,
                                       const std::filesystem::path& abi_include_dir) const override {
    std::string icpx = env_.FindProgram("icpx");
    std::string acpp = env_.FindProgram("acpp");
    CompileCommand cmd;
    if (!icpx.empty()) {
      cmd.argv = {icpx, "-fsycl", "-O3", "-std=c++17", "-shared", "-fPIC", "-I",
                  abi_include_dir.string(), "-o", output.string(), source.string()};
    } else if (!acpp.empty()) {
      cmd.argv = {acpp, "-O3", "-shared", "-fPIC", "-I", abi_include_dir.string(), "-o",
                  output.string(), source.string()};
    } else {
      return Unavailable(
          "no SYCL compiler: install Intel oneAPI (icpx) or AdaptiveCpp (acpp) and put it on PATH");
    }
    return cmd;
  }

 private:
  Target target_;
  const Env& env_;
  ModelTraits traits_;
};

}  // namespace

std::unique_ptr<Backend> NewSyclBackend(const Target& target, const Env& env) {
  return std::make_unique<SyclBackend>(target, env);
}

}  // namespace kforge
