#include "python_dsl.h"

#include <fmt/format.h>

#include "formats.h"
#include "kforge/target/probe.h"

namespace kforge {
namespace {

class PythonDslBackend : public Backend {
 public:
  PythonDslBackend(Target target, PythonDslSpec spec)
      : target_(std::move(target)), spec_(std::move(spec)) {}

  const Target& target() const override { return target_; }
  const ModelTraits& traits() const override { return spec_.traits; }
  std::string RunnerDevice() const override { return spec_.device; }

  Availability Probe() const override {
    Availability a;
    if (RunnerPython().empty()) {
      a.missing.push_back("no Python with torch for the runner (set KFORGE_PYTHON)");
      return a;
    }
    a.toolchain_version = PythonModuleVersion(spec_.module);
    if (a.toolchain_version.empty()) {
      a.missing.push_back(fmt::format("{} cannot import {}: {}", RunnerPython(), spec_.module,
                                      spec_.install_hint));
    } else {
      a.toolchain = true;
      a.toolchain_version = spec_.module + " " + a.toolchain_version;
    }
    if (PythonModuleVersion(spec_.device_module).empty()) {
      a.missing.push_back(spec_.device_hint);
    } else {
      a.device = true;
    }
    return a;
  }

 private:
  Target target_;
  PythonDslSpec spec_;
};

}  // namespace

std::unique_ptr<Backend> NewPythonDslBackend(const Target& target, PythonDslSpec spec) {
  return std::make_unique<PythonDslBackend>(target, std::move(spec));
}

std::unique_ptr<Backend> NewTritonBackend(const Target& target, const Env& /*env*/) {
  StaticRuleSet rules;
  rules.implicit_tf32_calls = {"triton.language.dot"};
  PythonDslSpec spec{
      .traits = {.title = "Triton",
                 .format = backends::ModuleFormat(ProgrammingModel::kTriton),
                 .kernelbench_compat = false,
                 .stream = StreamHandle::kNone,
                 .templates = "triton",
                 .profilers = target.vendor == Vendor::kNvidia ? backends::NvidiaProfilers()
                                                               : std::vector<std::string>{"torch"},
                 .static_rules = rules},
      .module = "triton",
      .install_hint = "pip install triton (it ships with CUDA/ROCm builds of torch)",
      .device = target.vendor == Vendor::kIntel ? "xpu:0" : "cuda:0",
      .device_module = "torch.cuda",
      .device_hint = "no GPU visible to the runner's torch"};
  return NewPythonDslBackend(target, std::move(spec));
}

std::unique_ptr<Backend> NewCuteBackend(const Target& target, const Env& /*env*/) {
  PythonDslSpec spec{.traits = {.title = "CuTe DSL (CUTLASS Python)",
                                .format = backends::ModuleFormat(ProgrammingModel::kCute),
                                .kernelbench_compat = false,
                                .stream = StreamHandle::kNone,
                                .templates = "cute",
                                .profilers = backends::NvidiaProfilers(),
                                .static_rules = {}},
                     .module = "cutlass",
                     .install_hint = "pip install nvidia-cutlass-dsl (CuTe DSL)",
                     .device = "cuda:0",
                     .device_module = "torch.cuda",
                     .device_hint = "no NVIDIA GPU visible to the runner's torch"};
  return NewPythonDslBackend(target, std::move(spec));
}

std::unique_ptr<Backend> NewMetalBackend(const Target& target, const Env& /*env*/) {
  // Metal shaders are compiled at run time by torch.mps.compile_shader (PyTorch >= 2.6 on macOS).
  PythonDslSpec spec{.traits = {.title = "Metal Shading Language",
                                .format = backends::ModuleFormat(ProgrammingModel::kMetal),
                                .kernelbench_compat = false,
                                .stream = StreamHandle::kNone,
                                .templates = "metal",
                                .profilers = {"torch"},
                                .static_rules = {}},
                     .module = "torch.mps",
                     .install_hint = "needs macOS with PyTorch >= 2.6 (torch.mps.compile_shader)",
                     .device = "mps",
                     .device_module = "torch.mps.available",
                     .device_hint = "no Apple GPU: Metal runs on macOS with Apple silicon"};
  return NewPythonDslBackend(target, std::move(spec));
}

}  // namespace kforge
