// Per-model concurrency and rate limits, and the provider wrapper that applies them.
//
// A request first takes one of `max_concurrency` slots, then a request slot (requests are spaced
// 60 s / requests_per_minute apart, with up to `burst` taken back to back after an idle spell),
// then its estimated tokens from a token bucket holding one minute of tokens_per_minute. After the
// call the bucket is corrected with the real usage. Waiting honours cancellation and deadline.
// The HTTP providers take a permit for every request they put on the wire, retries included
// (SendWithRetry); other providers (the inbox) take one per call (NewRateLimitedProvider).
//
// Scope. A limiter made with the constructor counts this process only. One opened with
// OpenShared() counts every process of this host that opens the same folder (provider_factory
// opens <KforgeCacheDir()>/limits/<endpoint and model>, so two `kforge run`s against one
// endpoint share its limits): its concurrency slots are lock files held with flock(2) while a
// request is in flight (a killed process releases its slot), and the request spacing and the
// token bucket live in one state file read and written under flock(2), on the wall clock.
#ifndef KFORGE_LLM_RATE_LIMITER_H_
#define KFORGE_LLM_RATE_LIMITER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>

#include "kforge/core/error.h"
#include "kforge/llm/call_options.h"
#include "kforge/llm/provider.h"

namespace kforge::llm {

struct RateLimits {
  int max_concurrency = 0;           // requests in flight at once; 0 = unlimited
  double requests_per_minute = 0.0;  // 0 = unlimited
  double tokens_per_minute = 0.0;    // input + output tokens; 0 = unlimited
  int burst = 1;                     // requests that may start back to back; at least 1

  bool any() const {
    return max_concurrency > 0 || requests_per_minute > 0 || tokens_per_minute > 0;
  }
};

// Thread-safe; shared by every call to one model.
class RateLimiter {
 public:
  // Limits of this process only.
  explicit RateLimiter(RateLimits limits);
  // Limits shared with every process of this host that opens `state_dir` (created if missing).
  // Errors: kIo when the folder or its state file cannot be created or opened.
  static Result<std::shared_ptr<RateLimiter>> OpenShared(RateLimits limits,
                                                         const std::filesystem::path& state_dir);
  ~RateLimiter();
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
    Permit(RateLimiter* limiter, std::int64_t estimated_tokens, int slot_fd);
    RateLimiter* limiter_;
    std::int64_t estimated_tokens_;
    int slot_fd_;  // the host slot's lock file (shared limiters with max_concurrency), else -1
  };

  // Blocks until a request may start. Errors: kCancelled; kTimeout (the deadline passed while
  // waiting); kResourceExhausted (the rate limit would start it only after the deadline); kIo
  // (the shared state could not be read or written).
  Result<Permit> Acquire(std::int64_t estimated_tokens, const CallOptions& options);
  // Corrects the token bucket after a call whose permit is already gone: it took
  // `estimated_tokens` and used `actual_tokens`.
  void SettleTokens(std::int64_t estimated_tokens, std::int64_t actual_tokens);

  const RateLimits& limits() const { return limits_; }
  // Whether the limits are shared with other processes (OpenShared).
  bool shared() const { return !state_dir_.empty(); }

 private:
  // The spacing and bucket state, in nanoseconds of the limiter's clock (steady in-process, the
  // wall clock when shared: the file outlives processes and boots).
  struct State {
    std::int64_t next_request = 0;  // theoretical arrival time of the next request (GCRA)
    std::int64_t last_start = 0;    // when the last request actually started; 0 = never
    double tokens = 0.0;            // tokens available
    std::int64_t refilled = 0;      // when `tokens` was last refilled; 0 = never (a full bucket)
  };

  RateLimiter(RateLimits limits, std::filesystem::path state_dir, int state_fd);
  std::int64_t Now() const;
  // Runs `update` on the state with the lock(s) held and the current time, then stores the state.
  Result<std::int64_t> WithState(const std::function<std::int64_t(State&, std::int64_t)>& update);
  Result<int> TakeSlot(const CallOptions& options);  // the slot's fd, or -1 (in-process slot)
  void Release(int slot_fd);

  const RateLimits limits_;
  const std::filesystem::path state_dir_;  // empty: this process only
  const int state_fd_;                     // the shared state file, or -1
  std::mutex mu_;                          // guards the members below and the state file
  std::condition_variable cv_;
  int in_flight_ = 0;  // in-process concurrency slots in use
  State state_;        // in-process state (shared limiters keep theirs in the file)
};

// Wraps `inner` so that every call goes through `limiter`.
std::unique_ptr<Provider> NewRateLimitedProvider(std::shared_ptr<Provider> inner,
                                                 std::shared_ptr<RateLimiter> limiter);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_RATE_LIMITER_H_
