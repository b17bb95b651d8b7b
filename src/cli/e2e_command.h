// `kforge e2e MODEL.py --target T --model M`: a model's kernels found, synthesized, put in and
// measured (docs/e2e.md); `kforge export RUN --as torch-op`: the kernels of such a run as an
// installable package that works without KForge.
#ifndef KFORGE_SRC_CLI_E2E_COMMAND_H_
#define KFORGE_SRC_CLI_E2E_COMMAND_H_

#include <CLI/CLI.hpp>

namespace kforge {

void AddE2eCommand(CLI::App& app);
void AddExportCommand(CLI::App& app);

}  // namespace kforge

#endif  // KFORGE_SRC_CLI_E2E_COMMAND_H_
