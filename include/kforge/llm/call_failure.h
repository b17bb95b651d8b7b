// What a failed LLM call means for the run that made it: wait and resume, wait for a person, or
// stop because nothing will change by waiting.
//
// The llm layer gives its errors codes that say this (docs/llm.md, "Reliability"):
//   kUnavailable, kTimeout, kParse  the provider failed after its retries (5xx, 529, overloaded,
//                                   rate limited, a too-long Retry-After, refused or cut
//                                   connections, timeouts, a malformed or truncated body)
//   kUnavailable from the inbox     the prompt is written and its answer is not there yet
//   kCancelled                      the caller cancelled the call (Ctrl-C)
//   kResourceExhausted              the run's own token or money budget refused the call
//   anything else                   permanent: a refused key, no quota, an unknown model, a
//                                   rejected request, an empty answer cut by max_tokens or a
//                                   safety filter, a diverged replay
#ifndef KFORGE_LLM_CALL_FAILURE_H_
#define KFORGE_LLM_CALL_FAILURE_H_

#include <string_view>

#include "kforge/core/error.h"
#include "kforge/llm/provider.h"

namespace kforge::llm {

enum class CallFailureKind {
  kTransient,       // try again later: the run is paused (interrupted) and `kforge resume` continues
  kAwaitingAnswer,  // an inbox prompt waits for its answer file
  kCancelled,       // cancelled by the caller
  kBudget,          // the run's budget is spent: resume with a larger budget
  kPermanent,       // waiting will not help: the message says what to fix
};

// Stable lowercase name: "transient", "awaiting_answer", "cancelled", "budget", "permanent".
std::string_view CallFailureKindName(CallFailureKind kind);

// The kind of `error`, returned by a call to the provider described by `who` (its Info(); the
// inbox's "not answered yet" is kUnavailable like an outage, and only `who` tells them apart).
CallFailureKind ClassifyCallFailure(const Error& error, const ProviderInfo& who);

// Of two failures of one run, the one that decides how the run ends: permanent, then transient,
// then awaiting an answer, then budget, then cancelled.
CallFailureKind MoreDecisive(CallFailureKind a, CallFailureKind b);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_CALL_FAILURE_H_
