// Retries with exponential back-off and jitter, and the classification of HTTP failures.
//
// Retried: HTTP 408, 409, 429 (except an exhausted quota), every 5xx (including Anthropic's 529),
// any error body that says "overloaded", connections reset or cut short, and timeouts of one
// attempt. Not retried: other 4xx (a bad key, a bad request, an unknown model cannot succeed by
// waiting), a connection that could not be made at all (refused: nothing listens there, so
// backing off for seconds only delays the message), a cancelled call, a passed deadline.
//
// The wait before a retry is the provider's when it states one: the `retry-after-ms` or
// `Retry-After` header (seconds or an HTTP date), on a 429 OpenAI's `x-ratelimit-reset-requests`
// / `x-ratelimit-reset-tokens` headers (durations such as "1m2.5s", "250ms"; the one whose
// `x-ratelimit-remaining-*` is 0, else the longer), or Gemini's `RetryInfo.retryDelay` in the
// error body ("25s"). A stated wait longer than max_retry_after fails the call at once, naming
// the wait and where it was stated. Without one the wait is min(max_backoff, initial_backoff *
// multiplier^n) with "equal jitter" (a uniformly random half of it added to the other half).
//
// Every attempt that goes on the wire first takes a permit of the model's rate limiter
// (SendOptions::limiter), so retries count against requests_per_minute and max_concurrency like
// first attempts; the concurrency slot is not held while waiting to retry.
#ifndef KFORGE_LLM_RETRY_H_
#define KFORGE_LLM_RETRY_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kforge/core/error.h"
#include "kforge/llm/call_options.h"
#include "kforge/llm/http_transport.h"

namespace kforge::llm {

class RateLimiter;

struct RetryPolicy {
  int max_attempts = 5;  // total attempts, the first included; 1 = never retry
  std::chrono::milliseconds initial_backoff{1'000};
  std::chrono::milliseconds max_backoff{60'000};
  double multiplier = 2.0;
  // A provider-stated wait longer than this fails the call at once instead of sleeping through it.
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
  // The wait the provider stated, and where: "Retry-After", "retry-after-ms",
  // "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens", "RetryInfo.retryDelay".
  std::optional<std::chrono::milliseconds> retry_after;
  std::string retry_after_source;
};
AttemptVerdict ClassifyHttpStatus(const HttpResponse& response);

// Parses a Retry-After value: delta-seconds ("2", "1.5") or an HTTP date; nullopt if neither.
std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view value);

// Parses a duration written as a sequence of numbers with units h, m, s, ms, us (or µs), ns:
// "1m2.5s", "250ms", "6m0s", "25s", "0.5s" (OpenAI's rate-limit headers, protobuf's Duration in
// JSON). Rounded up to whole milliseconds; nullopt if the text is not such a duration.
std::optional<std::chrono::milliseconds> ParseDurationText(std::string_view text);

// How SendWithRetry treats one call beyond the RetryPolicy.
struct SendOptions {
  // Taken before every attempt (may be null: no limits). Its tokens are taken with
  // `estimated_tokens` per attempt.
  RateLimiter* limiter = nullptr;
  std::int64_t estimated_tokens = 0;
  // The model's own bound on the whole call (call_timeout_s): past it the call fails with
  // kTimeout (transient). The caller's CallOptions::deadline bounds it too; a wait that would
  // cross the caller's deadline fails with kResourceExhausted (the caller's budget is spent).
  std::optional<std::chrono::steady_clock::time_point> call_deadline;
  std::chrono::milliseconds call_timeout{0};  // named in messages
};

// Sends `request` until it gets a 2xx response or a final failure. A non-2xx final answer becomes
// an Error with a message naming the model, the status, the API's own error message (redacted)
// and what to do; its code is kPermissionDenied (401/403, an exhausted quota), kNotFound (404),
// kInvalidArgument (other 4xx) or kUnavailable (5xx, 429 after every retry, a stated wait longer
// than max_retry_after). `attempts` receives the number of attempts made.
Result<HttpResponse> SendWithRetry(HttpTransport& transport, const HttpRequest& request,
                                   const RetryPolicy& policy, const CallOptions& options,
                                   const EndpointLabel& label, int* attempts,
                                   const SendOptions& send = {});

}  // namespace kforge::llm

#endif  // KFORGE_LLM_RETRY_H_
