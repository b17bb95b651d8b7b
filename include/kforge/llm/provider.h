// Provider: the seam between KForge and any LLM (an HTTP API, a local server, a cassette, a person).
//
// Contract:
// - Complete() is thread-safe: any number of threads may call it concurrently on one provider.
//   Implementations that hold state (cassettes, the inbox, rate limiters) synchronise internally.
// - Complete() blocks until the answer is complete, the call fails, CallOptions::cancel is
//   cancelled (kCancelled) or CallOptions::deadline passes (kTimeout).
// - Expected failures are values: HTTP errors, timeouts, budget refusals, malformed bodies and
//   "waiting for an answer" are returned as Errors whose message names the model and says what to
//   do; no exception leaves Complete(). Error messages never contain an API key.
// - The caller owns the Request and CallOptions and must keep them alive during the call only.
// - A Provider must outlive every call in flight on it. Wrappers (rate limiting, budget, recording)
//   own the provider they wrap through a shared_ptr.
#ifndef KFORGE_LLM_PROVIDER_H_
#define KFORGE_LLM_PROVIDER_H_

#include <string>

#include "kforge/core/error.h"
#include "kforge/llm/call_options.h"
#include "kforge/llm/request.h"
#include "kforge/llm/response.h"

namespace kforge::llm {

// Who answers: stable identifiers recorded in cassettes and the run store.
struct ProviderInfo {
  std::string provider;  // "openai", "anthropic", "gemini", "openai_compatible", "inbox", "replay"
  std::string model_id;  // registry id, e.g. "claude-sonnet-4"
  std::string model;     // wire model name, e.g. "claude-sonnet-4-20250514"
  std::string endpoint;  // base URL or inbox directory (redacted)
};

class Provider {
 public:
  virtual ~Provider() = default;

  virtual Result<Response> Complete(const Request& request, const CallOptions& options) = 0;
  // Constant for the provider's lifetime; thread-safe.
  virtual ProviderInfo Info() const = 0;
};

}  // namespace kforge::llm

#endif  // KFORGE_LLM_PROVIDER_H_
