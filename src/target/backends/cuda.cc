// nvidia/cuda: CUDA C++ compiled by nvcc into a shared object exporting kforge_forward.
#include <fmt/format.h>
#include <unistd.h>

#include "formats.h"
#include "kforge/core/subprocess.h"
#include "kforge/target/backend.h"
#include "kforge/target/probe.h"

namespace kforge {
namespace {

std::string Nvcc(const Env& env) {
  std::string nvcc = env.FindProgram("nvcc");
  if (nvcc.empty() && env.IsExecutable("/usr/local/cuda/bin/nvcc")) {
    nvcc = "/usr/local/cuda/bin/nvcc";
  }
  return nvcc;
}

// Compute capability of the first GPU as 90 for 9.0; 0 if unknown.
int LocalComputeCapability(const Env& env) {
  std::string smi = env.FindProgram("nvidia-smi");
  if (smi.empty()) return 0;
  ProcessSpec spec;
  spec.argv = {smi, "--query-gpu=compute_cap", "--format=csv,noheader"};
  spec.timeout = std::chrono::seconds(30);
  auto r = env.Run(spec);
  if (!r || r->state != ProcessState::kDone) return 0;
  double cc = std::atof(r->stdout_text.c_str());
  return static_cast<int>(cc * 10 + 0.5);
}

// "nvcc 13.0.48" from the "Cuda compilation tools, release 13.0, V13.0.48" line.
std::string NvccVersion(const std::string& nvcc, const Env& env) {
  ProcessSpec spec;
  spec.argv = {nvcc, "--version"};
  auto r = env.Run(spec);
  if (!r) return "nvcc";
  auto at = r->stdout_text.find(", V");
  if (at == std::string::npos) return "nvcc";
  auto end = r->stdout_text.find('\n', at);
  return "nvcc " + r->stdout_text.substr(at + 3, end - at - 3);
}

class CudaBackend : public Backend {
 public:
  CudaBackend(Target target, const Env& env)
      : target_(std::move(target)),
        env_(env),
        traits_{.title = "CUDA C++",
                .format = backends::NativeFormat(ProgrammingModel::kCuda, "kernel.cu", "cuda",
                                                 {".cu"}, {"cuda", "cu"}),
                .kernelbench_compat = true,
                .stream = StreamHandle::kCudaStream,
                .templates = "cuda",
                .profilers = backends::NvidiaProfilers(),
                .static_rules = {}} {}

  const Target& target() const override { return target_; }
  const ModelTraits& traits() const override { return traits_; }
  std::string RunnerDevice() const override { return "cuda:0"; }

  Availability Probe() const override {
    Availability a;
    std::string nvcc = Nvcc(env_);
    if (nvcc.empty()) {
      a.missing.push_back("nvcc not found: install the CUDA toolkit and put nvcc on PATH");
    } else {
      a.toolchain = true;
      a.toolchain_version = NvccVersion(nvcc, env_);
    }
    if (NvidiaGpus().empty()) {
      a.missing.push_back("no NVIDIA GPU: nvidia-smi -L lists none (driver absent or no device)");
    } else if (PythonModuleVersion("torch.cuda").empty()) {
      a.missing.push_back(fmt::format(
          "the runner's Python ({}) has no CUDA-enabled torch: install a CUDA build of PyTorch",
          RunnerPython().empty() ? "none found" : RunnerPython()));
    } else {
      a.device = true;
    }
    return a;
  }

  Result<CompileCommand> NativeCompile(const std::filesystem::path& source,
                                       const std::filesystem::path& output,
                                       const std::filesystem::path& abi_include_dir) const override {
    std::string nvcc = Nvcc(env_);
    if (nvcc.empty()) {
      return Unavailable("nvcc not found: install the CUDA toolkit and put nvcc on PATH");
    }
    int arch = target_.arch;
    if (arch == 0) arch = LocalComputeCapability(env_);
    if (arch == 0) arch = 90;  // no GPU here and none named: build for Hopper, the project's device
    // sm_90a unlocks wgmma/setmaxnreg; its code runs on sm_90 parts only, which is the target.
    std::string gencode = arch == 90 ? "-gencode=arch=compute_90a,code=sm_90a"
                                     : fmt::format("-gencode=arch=compute_{0},code=sm_{0}", arch);
    CompileCommand cmd;
    cmd.argv = {nvcc, "-O3", "-std=c++17", gencode, "-lineinfo", "-shared", "-Xcompiler",
                "-fPIC", "-I", abi_include_dir.string(), "-o", output.string(), source.string()};
    return cmd;
  }

 private:
  Target target_;
  const Env& env_;
  ModelTraits traits_;
};

}  // namespace

std::unique_ptr<Backend> NewCudaBackend(const Target& target, const Env& env) {
  return std::make_unique<CudaBackend>(target, env);
}

}  // namespace kforge
