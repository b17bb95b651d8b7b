// The exit codes of the kforge commands, in one table: every command returns these, its --help
// says which it uses, and docs/llm.md ("When a call fails") says the same for run and bench.
// Named so that they do not clash with the commands' local constants.
#ifndef KFORGE_CLI_EXIT_CODES_H_
#define KFORGE_CLI_EXIT_CODES_H_

namespace kforge {

// eval: every candidate correct; run: a correct kernel; bench: every task has one.
inline constexpr int kExitOk = 0;
// eval: a verdict other than correct; run: no correct kernel; bench: not every task has one (or
// the bench was stopped).
inline constexpr int kExitNotAll = 1;
// Bad input, named in the message: arguments, files, a task, a model id; for run and bench also
// an LLM call that cannot succeed by waiting (a refused key, no quota, an unknown model, a
// rejected request): the run is stored as `failed`, and `kforge resume` continues it once fixed.
inline constexpr int kExitBadInput = 2;
// KForge, the store, the toolchain or the cluster failed.
inline constexpr int kExitKforgeFailed = 3;
// run, bench: paused by the LLM provider: a call failed after its retries (5xx, 529, overloaded,
// rate limited, a too-long stated wait, timeouts, refused connections). The run is stored as
// `interrupted`; the message names the failure and prints the `kforge resume` command.
inline constexpr int kExitProviderPause = 4;
// run, bench: paused, waiting for an inbox answer (the prompt's path and the resume command are
// printed). When both pauses stop parts of one run, 4 wins: the provider must be retried.
inline constexpr int kExitAnswerPause = 5;

}  // namespace kforge

#endif  // KFORGE_CLI_EXIT_CODES_H_
