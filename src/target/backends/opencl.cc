// cpu/opencl, nvidia/opencl, amd/opencl, intel/opencl: OpenCL C built by the device's own OpenCL
// runtime inside the runner (pyopencl); the candidate is a Python file with SOURCE and launch().
#include <fmt/format.h>

#include "formats.h"
#include "kforge/target/backend.h"
#include "kforge/target/probe.h"

namespace kforge {
namespace {

class OpenClBackend : public Backend {
 public:
  explicit OpenClBackend(Target target)
      : target_(std::move(target)),
        traits_{.title = "OpenCL C",
                .format = backends::OpenClFormat(ProgrammingModel::kOpenCl),
                .kernelbench_compat = false,
                .stream = StreamHandle::kNone,  // launch() gets the queue itself
                .templates = "opencl",
                .profilers = {"opencl", "torch"},
                .static_rules = {}} {}

  const Target& target() const override { return target_; }
  const ModelTraits& traits() const override { return traits_; }

  std::string RunnerDevice() const override {
    // The reference runs where torch is fastest for this vendor; the kernel runs on OpenCL.
    return target_.vendor == Vendor::kNvidia && !PythonModuleVersion("torch.cuda").empty()
               ? "cuda:0"
               : "cpu";
  }

  std::string OpenClPlatform() const override {
    switch (target_.vendor) {
      case Vendor::kNvidia: return "NVIDIA CUDA";
      case Vendor::kAmd: return "AMD Accelerated Parallel Processing";
      case Vendor::kIntel: return "Intel(R) OpenCL";
      case Vendor::kCpu: return "Portable Computing Language";
      case Vendor::kApple: return "Apple";
    }
    return {};
  }

  Availability Probe() const override {
    Availability a;
    std::string want = OpenClPlatform();
    for (const auto& p : OpenClPlatforms()) {
      if (p.name.find(want) != std::string::npos && !p.devices.empty()) {
        a.device = true;
        a.toolchain_version = fmt::format("{} ({})", p.name, p.devices.front());
      }
    }
    if (!a.device) {
      a.missing.push_back(fmt::format(
          "no OpenCL platform '{}' with a device{}", want,
          target_.vendor == Vendor::kCpu ? ": apt-get install pocl-opencl-icd ocl-icd-libopencl1"
                                         : " (install the vendor's OpenCL driver / ICD)"));
    }
    if (PythonModuleVersion("pyopencl").empty()) {
      a.missing.push_back(fmt::format(
          "the runner's Python ({}) cannot import pyopencl: apt-get install python3-pyopencl or "
          "pip install pyopencl",
          RunnerPython().empty() ? "none found" : RunnerPython()));
    } else {
      a.toolchain = true;
    }
    return a;
  }

  bool UsesAccelerator() const override { return target_.vendor != Vendor::kCpu; }

 private:
  Target target_;
  ModelTraits traits_;
};

}  // namespace

// The OpenCL runtime is asked through the ICD loader (probe.h), not through `env`.
std::unique_ptr<Backend> NewOpenClBackend(const Target& target, const Env& /*env*/) {
  return std::make_unique<OpenClBackend>(target);
}

}  // namespace kforge
