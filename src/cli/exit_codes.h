// The exit codes of every `kforge` command, in one table: each command's `--help` ends with its
// rows (ExitCodesFooter), docs/exit-codes.md lists the same rows, and tests/cli/exit_codes_cli.sh
// checks the two against each other. A code keeps its meaning across commands: 2 is always the
// user's input, 3 always KForge's (or a toolchain's) failure, 4 and 5 always a resumable pause.
#ifndef KFORGE_SRC_CLI_EXIT_CODES_H_
#define KFORGE_SRC_CLI_EXIT_CODES_H_

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

namespace kforge {

inline constexpr int kExitOk = 0;
inline constexpr int kExitNotAll = 1;        // the command ran; its result is not the one asked
inline constexpr int kExitBadInput = 2;      // the message names the input and the fix
inline constexpr int kExitKforgeFailed = 3;  // KForge, the store, the toolchain or the task failed
// Resumable pauses of run, bench, e2e and resume (the run's state is `interrupted`):
inline constexpr int kExitProviderPause = 4;  // an LLM provider failed after its retries
inline constexpr int kExitAnswerPause = 5;    // a prompt waits for an inbox answer

struct ExitCodeMeaning {
  int code;
  std::string_view meaning;
};

struct CommandExitCodes {
  std::string_view command;
  std::vector<ExitCodeMeaning> codes;
};

inline const std::vector<CommandExitCodes>& ExitCodeTable() {
  static constexpr std::string_view kUsage = "bad input: the message names it and the fix";
  static constexpr std::string_view kFailed = "KForge, the store or a toolchain failed";
  static constexpr std::string_view kProvider =
      "paused: an LLM provider failed after its retries (server error, overloaded, timeout, "
      "connection refused); continue with `kforge resume RUN_DIR`";
  static constexpr std::string_view kAnswer =
      "paused: a prompt waits for your answer (inbox); write it where the message says, then "
      "`kforge resume RUN_DIR`";
  static const std::vector<CommandExitCodes> table = {
      {"targets", {{0, "listed (usable or not)"}}},
      {"eval",
       {{0, "every candidate is correct"},
        {1, "a candidate's verdict is not correct"},
        {2, kUsage},
        {3, "the task's reference, a target this machine lacks, or KForge failed"}}},
      {"calibrate",
       {{0, "measured and stored"}, {2, kUsage}, {3, "the target cannot run here, or the measurement failed"}}},
      {"run",
       {{0, "a correct kernel was found"},
        {1, "the run ended without a correct kernel"},
        {2, "bad input, a task that cannot run, or an LLM error to fix (key, quota, model, "
            "diverged replay)"},
        {3, kFailed},
        {4, kProvider},
        {5, kAnswer}}},
      {"resume",
       {{0, "as `kforge run` or `kforge bench`: the run ended with a correct kernel (every task)"},
        {1, "the run ended without a correct kernel (for some task)"},
        {2, kUsage},
        {3, kFailed},
        {4, kProvider},
        {5, kAnswer}}},
      {"bench",
       {{0, "every task has a correct kernel"},
        {1, "not every task has one, or the bench was stopped (Ctrl-C; resumable)"},
        {2, "bad input, a task that cannot run, or an LLM error to fix"},
        {3, "KForge, the store or the cluster failed"},
        {4, kProvider},
        {5, kAnswer}}},
      {"e2e",
       {{0, "kernels were put in and the patched model's outputs match"},
        {1, "no kernel was put in, or the outputs differ"},
        {2, kUsage},
        {3, "KForge, a phase, the store or the toolchain failed"},
        {4, kProvider},
        {5, kAnswer}}},
      {"export", {{0, "the package was written"}, {2, kUsage}, {3, kFailed}}},
      {"profile",
       {{0, "profiled"},
        {1, "the candidate failed under the profiler"},
        {2, "bad input, or the tool is missing"},
        {3, "KForge or the task failed"}}},
      {"demo",
       {{0, "the final kernel was faster than the first correct one"},
        {1, "it was not, or no correct kernel"},
        {2, kUsage},
        {3, "KForge failed"}}},
      {"models", {{0, "listed, or the check call answered"}, {1, "the registry or the check failed"}}},
      {"report", {{0, "written"}, {2, "bad input: not a run directory, an unknown format"}, {3, "the store or the file system failed"}}},
      {"compare", {{0, "done"}, {2, kUsage}, {3, "the store or the file system failed"}}},
  };
  return table;
}

// "Exit codes:\n  0  ...\n  1  ...\n" for `command`'s --help; empty for a command not in the
// table.
inline std::string ExitCodesFooter(std::string_view command) {
  for (const CommandExitCodes& c : ExitCodeTable()) {
    if (c.command != command) continue;
    std::string out = "Exit codes:\n";
    for (const ExitCodeMeaning& m : c.codes) out += fmt::format("  {}  {}\n", m.code, m.meaning);
    return out;
  }
  return {};
}

}  // namespace kforge

#endif  // KFORGE_SRC_CLI_EXIT_CODES_H_
