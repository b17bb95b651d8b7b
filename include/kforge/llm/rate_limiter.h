// Per-model concurrency and rate limits, and the provider wrapper that applies them.
//
// A call first takes one of `max_concurrency` slots, then a request slot (requests are spaced
// 60 s / requests_per_minute apart, with up to `burst` taken back to back after an idle spell),
// then its estimated tokens from a token bucket holding one minute of tokens_per_minute. After the
// call the bucket is corrected with the real usage. Waiting honours cancellation and deadline.
#ifndef KFORGE_LLM_RATE_LIMITER_H_
#define KFORGE_LLM_RATE_LIMITER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "kforge/core/error.h"
#include "kforge/llm/call_options.h"
#include "kforge/llm/provider.h"

namespace kforge::llm {

struct RateLimits {
  int max_concurrency = 0;           // calls in flight at once; 0 = unlimited
  double requests_per_minute = 0.0;  // 0 = unlimited
  double tokens_per_minute = 0.0;    // input + output tokens; 0 = unlimited
  int burst = 1;                     // requests that may start back to back; at least 1
};

// Thread-safe; shared by every call to one model.
class RateLimiter {
 public:
  explicit RateLimiter(RateLimits limits);
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  // Holds a concurrency slot until destroyed.
  class Permit {
   public:
    Permit(Permit&& other) noexcept;
    Permit& operator=(Permit&&) = delete;
    ~Permit();
    // Corrects the token bucket with the real token count of the call.
    void SettleTokens(std::int64_t actual_tokens);

   private:
    friend class RateLimiter;
    Permit(RateLimiter* limiter, std::int64_t estimated_tokens);
    RateLimiter* limiter_;
    std::int64_t estimated_tokens_;
  };

  // Blocks until the call may start. Errors: kCancelled, kTimeout (deadline passed while queued).
  Result<Permit> Acquire(std::int64_t estimated_tokens, const CallOptions& options);

  const RateLimits& limits() const { return limits_; }

 private:
  using Clock = std::chrono::steady_clock;
  void Release();

  const RateLimits limits_;
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0;                  // guarded by mu_
  Clock::time_point next_request_;     // guarded by mu_: earliest start of the next request slot
  Clock::time_point last_start_;       // guarded by mu_: when the last request actually started
  double tokens_available_ = 0.0;      // guarded by mu_
  Clock::time_point tokens_refilled_;  // guarded by mu_
};

// Wraps `inner` so that every call goes through `limiter`.
std::unique_ptr<Provider> NewRateLimitedProvider(std::shared_ptr<Provider> inner,
                                                 std::shared_ptr<RateLimiter> limiter);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_RATE_LIMITER_H_
