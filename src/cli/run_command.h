// `kforge run TASK --target T --model M`: the synthesis loop, with progress lines, ending with
// where the best kernel is and how to check it; `kforge resume RUN_DIR`: the same run again from
// its stored configuration, without repeating finished LLM calls or evaluations.
#ifndef KFORGE_SRC_CLI_RUN_COMMAND_H_
#define KFORGE_SRC_CLI_RUN_COMMAND_H_

#include <CLI/CLI.hpp>

namespace kforge {

void AddRunCommand(CLI::App& app);
void AddResumeCommand(CLI::App& app);

}  // namespace kforge

#endif  // KFORGE_SRC_CLI_RUN_COMMAND_H_
