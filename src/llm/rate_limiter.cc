#include "kforge/llm/rate_limiter.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "kforge/core/files.h"

namespace kforge::llm {
namespace {

using std::chrono::nanoseconds;

constexpr std::chrono::milliseconds kPollSlice{50};
constexpr int kInProcessSlot = -1;  // Permit::slot_fd_: an in-process concurrency slot
constexpr int kNoSlot = -2;         // Permit::slot_fd_: no concurrency limit
constexpr std::int64_t kNanosPerSecond = 1'000'000'000;

std::optional<Error> Interrupted(const CallOptions& options, std::string_view where) {
  if (options.cancel.IsCancelled()) {
    return Error{ErrorCode::kCancelled, fmt::format("call cancelled while {}", where)};
  }
  if (options.deadline && std::chrono::steady_clock::now() >= *options.deadline) {
    return Error{ErrorCode::kTimeout, fmt::format("deadline passed while {}", where)};
  }
  return std::nullopt;
}

// Locks `fd` with flock(2) for the lifetime of the guard.
class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() { ::flock(fd_, LOCK_UN); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// The state file's one line: "kforge-limits 1 <next_request> <last_start> <tokens> <refilled>".
constexpr char kStateFormat[] = "kforge-limits 1 %lld %lld %.3f %lld\n";

}  // namespace

RateLimiter::RateLimiter(RateLimits limits) : RateLimiter(limits, {}, -1) {}

RateLimiter::RateLimiter(RateLimits limits, std::filesystem::path state_dir, int state_fd)
    : limits_(limits), state_dir_(std::move(state_dir)), state_fd_(state_fd) {}

RateLimiter::~RateLimiter() {
  if (state_fd_ >= 0) ::close(state_fd_);
}

Result<std::shared_ptr<RateLimiter>> RateLimiter::OpenShared(
    RateLimits limits, const std::filesystem::path& state_dir) {
  KFORGE_RETURN_IF_ERROR(MakeDirs(state_dir));
  const std::filesystem::path file = state_dir / "state";
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return IoError(fmt::format("cannot open the shared rate-limit state {}: {}", file.string(),
                               std::strerror(errno)));
  }
  return std::shared_ptr<RateLimiter>(new RateLimiter(limits, state_dir, fd));
}

std::int64_t RateLimiter::Now() const {
  const auto now = shared() ? std::chrono::system_clock::now().time_since_epoch()
                            : std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration_cast<nanoseconds>(now).count();
}

Result<std::int64_t> RateLimiter::WithState(
    const std::function<std::int64_t(State&, std::int64_t)>& update) {
  std::lock_guard lock(mu_);  // threads of this process share one open file: flock alone is not enough
  if (state_fd_ < 0) return update(state_, Now());
  FileLock file_lock(state_fd_);
  char buffer[256] = {0};
  const ssize_t n = ::pread(state_fd_, buffer, sizeof(buffer) - 1, 0);
  State state;
  long long next = 0, last = 0, refilled = 0;
  double tokens = 0;
  if (n > 0 && std::sscanf(buffer, "kforge-limits 1 %lld %lld %lf %lld", &next, &last, &tokens,
                           &refilled) == 4) {
    state = State{next, last, tokens, refilled};
  }
  const std::int64_t result = update(state, Now());
  const int length = std::snprintf(buffer, sizeof(buffer), kStateFormat,
                                   static_cast<long long>(state.next_request),
                                   static_cast<long long>(state.last_start), state.tokens,
                                   static_cast<long long>(state.refilled));
  if (::pwrite(state_fd_, buffer, static_cast<std::size_t>(length), 0) != length ||
      ::ftruncate(state_fd_, length) != 0) {
    return IoError(fmt::format("cannot write the shared rate-limit state in {}: {}",
                               state_dir_.string(), std::strerror(errno)));
  }
  return result;
}

RateLimiter::Permit::Permit(RateLimiter* limiter, std::int64_t estimated_tokens, int slot_fd)
    : limiter_(limiter), estimated_tokens_(estimated_tokens), slot_fd_(slot_fd) {}

RateLimiter::Permit::Permit(Permit&& other) noexcept
    : limiter_(std::exchange(other.limiter_, nullptr)),
      estimated_tokens_(other.estimated_tokens_),
      slot_fd_(std::exchange(other.slot_fd_, kNoSlot)) {}

RateLimiter::Permit::~Permit() {
  if (limiter_ != nullptr) limiter_->Release(slot_fd_);
}

void RateLimiter::Permit::SettleTokens(std::int64_t actual_tokens) {
  if (limiter_ == nullptr) return;
  limiter_->SettleTokens(estimated_tokens_, actual_tokens);
  estimated_tokens_ = actual_tokens;
}

void RateLimiter::SettleTokens(std::int64_t estimated_tokens, std::int64_t actual_tokens) {
  if (limits_.tokens_per_minute <= 0) return;
  // May go below zero: the next calls then wait until the overdraft is refilled.
  (void)WithState([&](State& s, std::int64_t) {
    s.tokens -= static_cast<double>(actual_tokens - estimated_tokens);
    return std::int64_t{0};
  });
}

void RateLimiter::Release(int slot_fd) {
  if (slot_fd >= 0) {
    ::close(slot_fd);  // releases the host slot's flock
    return;
  }
  if (slot_fd != kInProcessSlot) return;
  {
    std::lock_guard lock(mu_);
    --in_flight_;
  }
  cv_.notify_one();
}

Result<int> RateLimiter::TakeSlot(const CallOptions& options) {
  if (!shared()) {
    std::unique_lock lock(mu_);
    while (limits_.max_concurrency > 0 && in_flight_ >= limits_.max_concurrency) {
      if (auto e = Interrupted(options, "waiting for a free concurrency slot")) {
        return std::unexpected(std::move(*e));
      }
      cv_.wait_for(lock, kPollSlice);
    }
    ++in_flight_;
    return kInProcessSlot;
  }
  if (limits_.max_concurrency <= 0) return kNoSlot;
  for (;;) {
    for (int k = 0; k < limits_.max_concurrency; ++k) {
      const std::filesystem::path slot = state_dir_ / fmt::format("slot-{}", k);
      const int fd = ::open(slot.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd < 0) {
        return IoError(fmt::format("cannot open the shared concurrency slot {}: {}",
                                   slot.string(), std::strerror(errno)));
      }
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
      ::close(fd);
    }
    if (auto e = Interrupted(options, "waiting for a free concurrency slot")) {
      return std::unexpected(std::move(*e));
    }
    options.cancel.WaitFor(kPollSlice);
  }
}

Result<RateLimiter::Permit> RateLimiter::Acquire(std::int64_t estimated_tokens,
                                                  const CallOptions& options) {
  // 1. A concurrency slot; the permit releases it on every early return below.
  auto slot = TakeSlot(options);
  if (!slot) return std::unexpected(slot.error());
  Permit permit(this, 0, *slot);
  // Waits `ns` nanoseconds of the limiter's clock; true when cancelled.
  auto wait = [&options](std::int64_t ns) {
    return ns > 0 && options.cancel.WaitFor(nanoseconds(ns));
  };

  // 2. A request slot (generic cell rate algorithm: `next_request` is the theoretical arrival
  // time; up to `burst` requests may start together after an idle spell).
  if (limits_.requests_per_minute > 0) {
    const auto interval =
        static_cast<std::int64_t>(60.0 * kNanosPerSecond / limits_.requests_per_minute);
    const int burst = std::max(1, limits_.burst);
    const std::int64_t tolerance = interval * (burst - 1);
    std::int64_t now = 0;
    auto start = WithState([&](State& s, std::int64_t t) {
      now = t;
      // A state from before a clock jump (or another boot) cannot hold a start this far ahead.
      if (s.next_request > t + interval * (burst + 1)) s.next_request = t;
      const std::int64_t begin = std::max(t, s.next_request - tolerance);
      s.next_request = std::max(s.next_request, begin) + interval;
      return begin;
    });
    if (!start) return std::unexpected(start.error());
    if (options.deadline &&
        std::chrono::steady_clock::now() + nanoseconds(*start - now) > *options.deadline) {
      return MakeError(ErrorCode::kResourceExhausted,
                       "the call's deadline would pass before the rate limit lets it start");
    }
    if (wait(*start - now)) {
      return MakeError(ErrorCode::kCancelled, "call cancelled while waiting for the rate limit");
    }
    // Without a burst, the starts themselves stay an interval apart: a thread (or process) woken
    // late must not start right on the heels of the next one, or scheduling delays would bunch
    // requests above the rate in a short window (what a provider's per-second limit counts).
    for (;;) {
      auto remaining = WithState([&](State& s, std::int64_t t) -> std::int64_t {
        if (s.last_start > t) s.last_start = 0;  // a clock jump
        if (burst <= 1 && s.last_start != 0 && t < s.last_start + interval) {
          return s.last_start + interval - t;
        }
        s.last_start = t;
        return 0;
      });
      if (!remaining) return std::unexpected(remaining.error());
      if (*remaining == 0) break;
      if (wait(*remaining)) {
        return MakeError(ErrorCode::kCancelled, "call cancelled while waiting for the rate limit");
      }
    }
  }

  // 3. Tokens.
  if (limits_.tokens_per_minute > 0) {
    const double capacity = limits_.tokens_per_minute;
    const double need = std::min(static_cast<double>(estimated_tokens), capacity);
    const double per_ns = limits_.tokens_per_minute / 60.0 / kNanosPerSecond;
    for (;;) {
      auto short_by = WithState([&](State& s, std::int64_t t) -> std::int64_t {
        if (s.refilled == 0 || s.refilled > t) {
          if (s.refilled == 0) s.tokens = capacity;
          s.refilled = t;
        }
        s.tokens = std::min(capacity, s.tokens + static_cast<double>(t - s.refilled) * per_ns);
        s.refilled = t;
        if (s.tokens >= need) {
          s.tokens -= need;
          return 0;
        }
        return std::max<std::int64_t>(1, static_cast<std::int64_t>((need - s.tokens) / per_ns));
      });
      if (!short_by) return std::unexpected(short_by.error());
      if (*short_by == 0) {
        permit.estimated_tokens_ = static_cast<std::int64_t>(need);
        break;
      }
      if (auto e = Interrupted(options, "waiting for the token rate limit")) {
        return std::unexpected(std::move(*e));
      }
      (void)wait(std::min<std::int64_t>(*short_by, kNanosPerSecond));
    }
  }
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
