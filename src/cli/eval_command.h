// `kforge eval TASK CANDIDATE --target T`: one evaluation, a readable verdict (or --json), stored.
#ifndef KFORGE_SRC_CLI_EVAL_COMMAND_H_
#define KFORGE_SRC_CLI_EVAL_COMMAND_H_

#include <CLI/CLI.hpp>

namespace kforge {

void AddEvalCommand(CLI::App& app);

}  // namespace kforge

#endif  // KFORGE_SRC_CLI_EVAL_COMMAND_H_
