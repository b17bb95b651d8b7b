// nvidia/helion: Helion, PyTorch with tiles compiled to Triton. A candidate is a Python file with
// a ModelNew whose forward calls @helion.kernel functions; inside a kernel, the bodies of the
// `hl.tile` / `hl.grid` loops run on the GPU and the rest is host code (plain PyTorch on the CPU
// side of the launch), so only those bodies may compute with torch operations.
#include <memory>
#include <utility>

#include "formats.h"
#include "kforge/target/backend.h"
#include "python_dsl.h"

namespace kforge {

std::unique_ptr<Backend> NewHelionBackend(const Target& target, const Env& /*env*/) {
  StaticRuleSet rules;
  rules.kernel_decorator_modules = {"triton", "cutlass", "cute", "helion"};
  rules.device_loop_iterables = {"helion.language.tile", "helion.language.grid"};
  PythonDslSpec spec{.traits = {.title = "Helion (PyTorch tiles compiled to Triton)",
                                .format = backends::ModuleFormat(ProgrammingModel::kHelion),
                                .kernelbench_compat = false,
                                .stream = StreamHandle::kNone,
                                .templates = "helion",
                                .profilers = backends::NvidiaProfilers(),
                                .static_rules = rules},
                     .module = "helion",
                     .install_hint = "pip install helion (it needs a CUDA build of torch and triton)",
                     .device = "cuda:0",
                     .device_module = "torch.cuda",
                     .device_hint = "no NVIDIA GPU visible to the runner's torch"};
  return NewPythonDslBackend(target, std::move(spec));
}

}  // namespace kforge
