// A cancellation token shared between whoever cancels and the calls that observe it.
//
// Copies share one state. Cancel() is thread-safe and wakes every WaitFor(); cancellation cannot be
// undone. A default-constructed token is live (not cancelled) and can be cancelled.
#ifndef KFORGE_LLM_CANCELLATION_H_
#define KFORGE_LLM_CANCELLATION_H_

#include <chrono>
#include <memory>

namespace kforge::llm {

class CancellationToken {
 public:
  CancellationToken();

  void Cancel() const;
  bool IsCancelled() const;
  // Sleeps up to `duration`; returns true early (and at once) if the token is or becomes cancelled.
  bool WaitFor(std::chrono::nanoseconds duration) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace kforge::llm

#endif  // KFORGE_LLM_CANCELLATION_H_
