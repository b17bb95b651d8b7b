// `kforge profile TASK CANDIDATE --target T`: runs the candidate under a profiler in a separate,
// untimed pass and prints the reducer's summary (or the raw output with --raw).
#ifndef KFORGE_CLI_PROFILE_COMMAND_H_
#define KFORGE_CLI_PROFILE_COMMAND_H_

#include <CLI/CLI.hpp>

namespace kforge {

void AddProfileCommand(CLI::App& app);

}  // namespace kforge

#endif  // KFORGE_CLI_PROFILE_COMMAND_H_
