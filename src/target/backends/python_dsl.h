// Shared shape of the backends whose candidates are Python files with a ModelNew class, jitted in
// the runner (Triton, CuTe DSL, Metal through torch.mps.compile_shader). Internal to src/target.
#ifndef KFORGE_SRC_TARGET_BACKENDS_PYTHON_DSL_H_
#define KFORGE_SRC_TARGET_BACKENDS_PYTHON_DSL_H_

#include <memory>
#include <string>

#include "kforge/target/backend.h"

namespace kforge {

struct PythonDslSpec {
  ModelTraits traits;         // the model's traits (format: a module candidate)
  std::string module;         // what the runner's Python must import, e.g. "triton"
  std::string install_hint;   // how to get it
  std::string device;         // runner device string
  std::string device_module;  // probe key that says the device is there, e.g. "torch.cuda"
  std::string device_hint;    // what is missing when it is not
};

std::unique_ptr<Backend> NewPythonDslBackend(const Target& target, PythonDslSpec spec);

}  // namespace kforge

#endif  // KFORGE_SRC_TARGET_BACKENDS_PYTHON_DSL_H_
