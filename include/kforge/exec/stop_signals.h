// StopSignals: Ctrl-C (SIGINT) and SIGTERM turned into the bench's stop requests.
//
// The first signal requests `stop` (no new step starts; steps in flight finish); the second
// requests `abandon` and cancels LLM calls in flight (evaluations in flight end as infra_error
// "cancelled", which a resume evaluates again). The handlers only write to a pipe; a watcher
// thread does the rest. The previous handlers come back when this object is destroyed.
#ifndef KFORGE_EXEC_STOP_SIGNALS_H_
#define KFORGE_EXEC_STOP_SIGNALS_H_

#include <functional>
#include <stop_token>
#include <thread>

#include "kforge/llm/cancellation.h"

namespace kforge::exec {

class StopSignals {
 public:
  // `on_signal(count)` (optional) is called on the watcher thread for each signal (e.g. to print
  // what happens next).
  explicit StopSignals(std::function<void(int count)> on_signal = {});
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  std::stop_token stop() const { return stop_.get_token(); }
  std::stop_token abandon() const { return abandon_.get_token(); }
  const llm::CancellationToken& cancel_calls() const { return cancel_; }
  // The number of the last signal received (SIGINT, SIGTERM), 0 when none.
  int signal_number() const;

  // Requests the stop as a signal would (tests, a budget).
  void RequestStop();

 private:
  std::stop_source stop_;
  std::stop_source abandon_;
  llm::CancellationToken cancel_;
  std::function<void(int)> on_signal_;
  std::jthread watcher_;
};

}  // namespace kforge::exec

#endif  // KFORGE_EXEC_STOP_SIGNALS_H_
