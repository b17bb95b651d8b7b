// `kforge run TASK --target T --model M`: the synthesis loop, with progress lines, ending with
// where the best kernel is and how to check it; `kforge resume RUN_DIR`: the same run again from
// its stored configuration, without repeating finished LLM calls or evaluations.
#ifndef KFORGE_SRC_CLI_RUN_COMMAND_H_
#define KFORGE_SRC_CLI_RUN_COMMAND_H_

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>

namespace kforge {

// A replayed `kforge run` (what `kforge demo` does): task, target, model id and cassette, with
// numbers in prompts allowed to differ from the recording.
struct ReplayRunRequest {
  std::string task;
  std::string target;
  std::string model;
  std::string cassette;
  int iterations = 1;
  bool profile = true;  // the profile pass before each analysis (as the recording had it, or not)
  std::string runs_dir = "kforge-runs";
};
// Runs it like `kforge run` (same progress and summary); returns the exit code, and the run's
// directory and id through the pointers.
int RunReplayed(const ReplayRunRequest& request, std::filesystem::path* run_dir,
                std::string* run_id);

void AddRunCommand(CLI::App& app);
void AddResumeCommand(CLI::App& app);

}  // namespace kforge

#endif  // KFORGE_SRC_CLI_RUN_COMMAND_H_
