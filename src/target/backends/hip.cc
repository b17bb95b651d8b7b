// amd/hip: HIP C++ compiled by hipcc into a shared object exporting kforge_forward. It compiles
// wherever hipcc is installed; it runs where ROCm sees an AMD GPU.
#include <fmt/format.h>
#include <unistd.h>

#include "formats.h"
#include "kforge/core/subprocess.h"
#include "kforge/target/backend.h"
#include "kforge/target/probe.h"

namespace kforge {
namespace {

class HipBackend : public Backend {
 public:
  HipBackend(Target target, const Env& env)
      : target_(std::move(target)),
        env_(env),
        traits_{.title = "HIP C++",
                .format = backends::NativeFormat(ProgrammingModel::kHip, "kernel.hip", "cpp",
                                                 {".hip"}, {"hip"}),
                .kernelbench_compat = true,
                .stream = StreamHandle::kHipStream,
                .templates = "hip",
                .profilers = {"torch"},
                .static_rules = {}} {}

  const Target& target() const override { return target_; }
  const ModelTraits& traits() const override { return traits_; }
  std::string RunnerDevice() const override { return "cuda:0"; }  // ROCm torch keeps the name

  Availability Probe() const override {
    Availability a;
    std::string hipcc = env_.FindProgram("hipcc");
    if (hipcc.empty()) {
      a.missing.push_back("hipcc not found: install ROCm (Debian: apt-get install hipcc)");
    } else {
      a.toolchain = true;
      a.toolchain_version = ProgramVersion(hipcc, {"--version"}, env_);
    }
    if (!env_.Exists("/dev/kfd")) {
      a.missing.push_back("no AMD GPU: /dev/kfd is absent (amdgpu driver with ROCm support)");
    } else if (PythonModuleVersion("torch.cuda").empty()) {
      a.missing.push_back("the runner's Python has no ROCm build of torch");
    } else {
      a.device = true;
    }
    return a;
  }

  Result<CompileCommand> NativeCompile(const std::filesystem::path& source,
                                       const std::filesystem::path& output,
                                       const std::filesystem::path& abi_include_dir) const override {
    std::string hipcc = env_.FindProgram("hipcc");
    if (hipcc.empty()) {
      return Unavailable("hipcc not found: install ROCm (Debian: apt-get install hipcc)");
    }
    // Without a device named in the target, build for gfx90a (MI200), which Debian's hipcc knows.
    std::string arch = target_.arch != 0 ? fmt::format("gfx{:x}", target_.arch) : "gfx90a";
    CompileCommand cmd;
    cmd.argv = {hipcc, "-O3", "-std=c++17", "--offload-arch=" + arch, "-shared", "-fPIC",
                "-I", abi_include_dir.string(), "-o", output.string(), "-x", "hip",
                source.string()};
    return cmd;
  }

 private:
  Target target_;
  const Env& env_;
  ModelTraits traits_;
};

}  // namespace

std::unique_ptr<Backend> NewHipBackend(const Target& target, const Env& env) {
  return std::make_unique<HipBackend>(target, env);
}

}  // namespace kforge
