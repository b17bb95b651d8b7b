// `kforge export RUN --as torch-op`: the integrated kernels of a `kforge e2e` run as a small
// installable Python package that works without KForge (docs/e2e.md, "Export"):
//
//   OUT/pyproject.toml, OUT/setup.py      setuptools; the build step compiles each kernel with the
//                                         command KForge compiled it with when it checked it
//   OUT/README.md                         what is inside, how to install and use it
//   OUT/<package>/__init__.py             patch(model) -> Patch (torch_op.Patch)
//   OUT/<package>/torch_op.py             runner/kforge_runner/e2e/torch_op.py, unchanged
//   OUT/<package>/sites.json              the sites (module instances, call signature, state)
//   OUT/<package>/kernels/<site>.<ext>    kernel sources and kforge_kernel.h
#ifndef KFORGE_E2E_TORCH_OP_EXPORT_H_
#define KFORGE_E2E_TORCH_OP_EXPORT_H_

#include <filesystem>
#include <string>

#include "kforge/core/error.h"

namespace kforge::e2e {

struct ExportRequest {
  std::filesystem::path run_dir;  // a `kforge e2e` run (holds e2e/sites.json)
  std::filesystem::path out_dir;  // created; must not exist or be empty
  std::string package;            // Python package name; empty: kforge_ops_<run suffix>
};

// How to install the package in `package_dir`, as shell lines: into a virtual environment that
// sees the installed torch (`python3 -m venv --system-site-packages`), since Debian's system
// Python refuses `pip install` into itself (PEP 668, "externally managed"), and pip must not
// replace the installed torch build (--no-build-isolation, --no-index).
std::string InstallCommands(const std::filesystem::path& package_dir);

// Returns the package name. Errors name the input and the fix: not an e2e run, no integrated
// kernel in it, an output folder in the way.
Result<std::string> ExportTorchOp(const ExportRequest& request);

}  // namespace kforge::e2e

#endif  // KFORGE_E2E_TORCH_OP_EXPORT_H_
