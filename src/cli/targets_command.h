// `kforge targets`: every target, whether its toolchain and device are here, and what is missing.
#ifndef KFORGE_SRC_CLI_TARGETS_COMMAND_H_
#define KFORGE_SRC_CLI_TARGETS_COMMAND_H_

#include <CLI/CLI.hpp>

namespace kforge {

void AddTargetsCommand(CLI::App& app);

}  // namespace kforge

#endif  // KFORGE_SRC_CLI_TARGETS_COMMAND_H_
