// Retries with exponential back-off and jitter, and the classification of HTTP failures.
//
// Retried: HTTP 408, 409, 429 (except an exhausted quota), every 5xx (including Anthropic's 529),
// any error body that says "overloaded", connection failures and timeouts of one attempt. Not
// retried: other 4xx (a bad key, a bad request, an unknown model cannot succeed by waiting), a
// cancelled call, a passed deadline. A `Retry-After` (seconds or HTTP date) or `retry-after-ms`
// header sets the wait; without one the wait is min(max_backoff, initial_backoff * multiplier^n)
// with "equal jitter" (a uniformly random half of it added to the other half).
#ifndef KFORGE_LLM_RETRY_H_
#define KFORGE_LLM_RETRY_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "kforge/core/error.h"
#include "kforge/llm/call_options.h"
#include "kforge/llm/http_transport.h"

namespace kforge::llm {

struct RetryPolicy {
  int max_attempts = 5;  // total attempts, the first included; 1 = never retry
  std::chrono::milliseconds initial_backoff{1'000};
  std::chrono::milliseconds max_backoff{60'000};
  double multiplier = 2.0;
  // A Retry-After longer than this fails the call at once instead of sleeping through it.
  std::chrono::milliseconds max_retry_after{120'000};
};

// Names used in error messages for one endpoint.
struct EndpointLabel {
  std::string model_id;     // registry id, e.g. "gpt-4.1"
  std::string api_key_env;  // variable holding the key, e.g. "OPENAI_API_KEY"; "" if none
};

// The result of one attempt, decided.
struct AttemptVerdict {
  bool retry = false;
  std::optional<std::chrono::milliseconds> retry_after;  // from the response headers
};
AttemptVerdict ClassifyHttpStatus(const HttpResponse& response);

// Parses a Retry-After value: delta-seconds ("2", "1.5") or an HTTP date; nullopt if neither.
std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view value);

// Sends `request` until it gets a 2xx response or a final failure. A non-2xx final answer becomes
// an Error with a message naming the model, the status, the API's own error message (redacted)
// and what to do; its code is kPermissionDenied (401/403), kNotFound (404), kInvalidArgument
// (other 4xx), kResourceExhausted (429) or kUnavailable (5xx). `attempts` receives the number of
// attempts made.
Result<HttpResponse> SendWithRetry(HttpTransport& transport, const HttpRequest& request,
                                   const RetryPolicy& policy, const CallOptions& options,
                                   const EndpointLabel& label, int* attempts);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_RETRY_H_
