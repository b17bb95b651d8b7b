#include "kforge/llm/cancellation.h"

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace kforge::llm {

struct CancellationToken::State {
  std::atomic<bool> cancelled{false};
  std::mutex mu;
  std::condition_variable cv;
};

CancellationToken::CancellationToken() : state_(std::make_shared<State>()) {}

void CancellationToken::Cancel() const {
  {
    std::lock_guard lock(state_->mu);
    state_->cancelled.store(true, std::memory_order_release);
  }
  state_->cv.notify_all();
}

bool CancellationToken::IsCancelled() const {
  return state_->cancelled.load(std::memory_order_acquire);
}

bool CancellationToken::WaitFor(std::chrono::nanoseconds duration) const {
  std::unique_lock lock(state_->mu);
  return state_->cv.wait_for(lock, duration, [this] {
    return state_->cancelled.load(std::memory_order_acquire);
  });
}

}  // namespace kforge::llm
