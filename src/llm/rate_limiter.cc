#include "kforge/llm/rate_limiter.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace kforge::llm {
namespace {

constexpr std::chrono::milliseconds kPollSlice{50};

std::optional<Error> Interrupted(const CallOptions& options, std::string_view where) {
  if (options.cancel.IsCancelled()) {
    return Error{ErrorCode::kCancelled, fmt::format("call cancelled while {}", where)};
  }
  if (options.deadline && std::chrono::steady_clock::now() >= *options.deadline) {
    return Error{ErrorCode::kTimeout, fmt::format("deadline passed while {}", where)};
  }
  return std::nullopt;
}

}  // namespace

RateLimiter::RateLimiter(RateLimits limits)
    : limits_(limits),
      next_request_(Clock::now()),
      tokens_available_(limits.tokens_per_minute),
      tokens_refilled_(Clock::now()) {}

RateLimiter::Permit::Permit(RateLimiter* limiter, std::int64_t estimated_tokens)
    : limiter_(limiter), estimated_tokens_(estimated_tokens) {}

RateLimiter::Permit::Permit(Permit&& other) noexcept
    : limiter_(std::exchange(other.limiter_, nullptr)),
      estimated_tokens_(other.estimated_tokens_) {}

RateLimiter::Permit::~Permit() {
  if (limiter_ != nullptr) limiter_->Release();
}

void RateLimiter::Permit::SettleTokens(std::int64_t actual_tokens) {
  if (limiter_ == nullptr || limiter_->limits_.tokens_per_minute <= 0) return;
  std::lock_guard lock(limiter_->mu_);
  // May go below zero: the next calls then wait until the overdraft is refilled.
  limiter_->tokens_available_ -= static_cast<double>(actual_tokens - estimated_tokens_);
  estimated_tokens_ = actual_tokens;
}

void RateLimiter::Release() {
  {
    std::lock_guard lock(mu_);
    --in_flight_;
  }
  cv_.notify_one();
}

Result<RateLimiter::Permit> RateLimiter::Acquire(std::int64_t estimated_tokens,
                                                  const CallOptions& options) {
  std::unique_lock lock(mu_);
  // 1. A concurrency slot.
  while (limits_.max_concurrency > 0 && in_flight_ >= limits_.max_concurrency) {
    if (auto e = Interrupted(options, "waiting for a free concurrency slot")) {
      return std::unexpected(std::move(*e));
    }
    cv_.wait_for(lock, kPollSlice);
  }
  ++in_flight_;
  Permit permit(this, 0);  // releases the slot on every early return below
  // Early returns unlock first: the permit's destructor takes the lock to release the slot.
  auto fail = [&lock](ErrorCode code, std::string message) {
    if (lock.owns_lock()) lock.unlock();
    return std::unexpected(Error{code, std::move(message)});
  };

  // 2. A request slot (generic cell rate algorithm: `next_request_` is the theoretical arrival
  // time; up to `burst` requests may start together after an idle spell).
  if (limits_.requests_per_minute > 0) {
    const auto interval = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(60.0 / limits_.requests_per_minute));
    const auto tolerance = interval * (std::max(1, limits_.burst) - 1);
    const Clock::time_point now = Clock::now();
    const Clock::time_point start = std::max(now, next_request_ - tolerance);
    next_request_ = std::max(next_request_, start) + interval;
    if (options.deadline && start > *options.deadline) {
      return fail(ErrorCode::kTimeout,
                  "the call's deadline would pass before the rate limit lets it start");
    }
    lock.unlock();
    if (start > now && options.cancel.WaitFor(start - now)) {
      return fail(ErrorCode::kCancelled, "call cancelled while waiting for the rate limit");
    }
    lock.lock();
    // Without a burst, the starts themselves stay an interval apart: a thread woken late must
    // not start right on the heels of the next one, or scheduling delays would bunch requests
    // above the rate in a short window (what a provider's per-second limit counts).
    while (limits_.burst <= 1 && last_start_ != Clock::time_point{}) {
      const Clock::time_point woke = Clock::now();
      const Clock::time_point earliest = last_start_ + interval;
      if (woke >= earliest) break;
      lock.unlock();
      if (options.cancel.WaitFor(earliest - woke)) {
        return fail(ErrorCode::kCancelled, "call cancelled while waiting for the rate limit");
      }
      lock.lock();
    }
    last_start_ = Clock::now();
  }

  // 3. Tokens.
  if (limits_.tokens_per_minute > 0) {
    const double capacity = limits_.tokens_per_minute;
    const double need = std::min(static_cast<double>(estimated_tokens), capacity);
    const double per_second = limits_.tokens_per_minute / 60.0;
    while (true) {
      const Clock::time_point now = Clock::now();
      const double elapsed = std::chrono::duration<double>(now - tokens_refilled_).count();
      tokens_available_ = std::min(capacity, tokens_available_ + elapsed * per_second);
      tokens_refilled_ = now;
      if (tokens_available_ >= need) {
        tokens_available_ -= need;
        permit.estimated_tokens_ = static_cast<std::int64_t>(need);
        break;
      }
      if (auto e = Interrupted(options, "waiting for the token rate limit")) {
        return fail(e->code, std::move(e->message));
      }
      const auto wait = std::chrono::duration<double>((need - tokens_available_) / per_second);
      lock.unlock();
      options.cancel.WaitFor(std::min<std::chrono::nanoseconds>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(wait), std::chrono::seconds(1)));
      lock.lock();
    }
  }
  lock.unlock();
  return permit;
}

namespace {

class RateLimitedProvider : public Provider {
 public:
  RateLimitedProvider(std::shared_ptr<Provider> inner, std::shared_ptr<RateLimiter> limiter)
      : inner_(std::move(inner)), limiter_(std::move(limiter)) {}

  Result<Response> Complete(const Request& request, const CallOptions& options) override {
    auto permit = limiter_->Acquire(request.EstimatePromptTokens(), options);
    if (!permit) {
      Error error = permit.error();
      error.message = fmt::format("model '{}': {}", inner_->Info().model_id, error.message);
      return std::unexpected(std::move(error));
    }
    auto response = inner_->Complete(request, options);
    if (response) permit->SettleTokens(response->usage.Total());
    return response;
  }

  ProviderInfo Info() const override { return inner_->Info(); }

 private:
  const std::shared_ptr<Provider> inner_;
  const std::shared_ptr<RateLimiter> limiter_;
};

}  // namespace

std::unique_ptr<Provider> NewRateLimitedProvider(std::shared_ptr<Provider> inner,
                                                 std::shared_ptr<RateLimiter> limiter) {
  return std::make_unique<RateLimitedProvider>(std::move(inner), std::move(limiter));
}

}  // namespace kforge::llm
