// Per-call options that are not part of the request itself (they do not enter its fingerprint).
#ifndef KFORGE_LLM_CALL_OPTIONS_H_
#define KFORGE_LLM_CALL_OPTIONS_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string_view>

#include "kforge/llm/cancellation.h"

namespace kforge::llm {

struct CallOptions {
  // Cancelling it ends the call (queued, in flight, or backing off) with ErrorCode::kCancelled
  // within about 50 ms. Default: a token nobody cancels.
  CancellationToken cancel;
  // Absolute deadline for the whole call including retries; unset = none (the model's connect,
  // idle and call timeouts still apply). Past it the call fails with kTimeout; a wait (rate
  // limit, back-off) that would cross it fails at once with kResourceExhausted.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Called with each piece of generated text as it arrives, where the provider streams
  // (OpenAI-compatible servers with stream = true). Called on the calling thread. Optional.
  std::function<void(std::string_view)> on_text;
};

}  // namespace kforge::llm

#endif  // KFORGE_LLM_CALL_OPTIONS_H_
