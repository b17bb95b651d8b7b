// BenchProgress: the live view of a bench. On a terminal: an overall bar with the ETA, the done,
// stopped and correct counts, tokens and money so far, the best speedups and the elapsed time
// (redrawn every second, so the clock moves), and one row per running task saying what it is
// doing now (generating, analysing, profiling, compiling, waiting for a device, evaluating,
// waiting for answer N: core/activity.h); each finished or stopped task leaves a line above the
// view with its outcome and, when it stopped, why (a prompt waiting for its answer names the
// file to write). Log lines and notices (Ctrl-C) are printed above the view too, so no stale
// frame is left behind. Elsewhere (a log file, CI): one plain line per finished step and per
// finished task.
//
// Counting: a task is done when its loop finished; a paused task (a prompt waiting for a
// person's answer) and a stopped one (a failed LLM call, Ctrl-C) are resumable and counted apart;
// a task that never started counts as none of them.
// The ETA counts every task as samples × iterations steps (a task that ends early counts as
// done), so it is an upper bound that tightens as tasks finish.
//
// Thread-safety: every method may be called from any thread (the bench's task threads, the
// signal watcher); one mutex guards the view.
#ifndef KFORGE_EXEC_BENCH_PROGRESS_H_
#define KFORGE_EXEC_BENCH_PROGRESS_H_

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kforge/exec/bench_runner.h"
#include "kforge/llm/budget.h"

namespace kforge::exec {

class BenchProgress : public BenchObserver {
 public:
  // `out` receives the view; `tty` picks the live view (and, while it is shown, routes the log
  // through Note()). `budget` (may be null) gives tokens and money. `steps_per_task` is
  // samples × iterations.
  BenchProgress(std::FILE* out, bool tty, std::vector<std::string> task_names,
                int steps_per_task, std::shared_ptr<llm::Budget> budget);
  ~BenchProgress() override;

  void OnTaskStarted(std::size_t task) override;
  void OnStep(std::size_t task, const synth::ProgressEvent& event) override;
  void OnActivity(std::size_t task, std::string_view activity) override;
  void OnTaskFinished(std::size_t task, const TaskOutcome& outcome) override;
  // Prints `line` for good: above the live view on a terminal, as a plain line elsewhere.
  void Note(const std::string& line);
  // Draws the final state (terminal), stops the clock and gives the log back.
  void Finish();

  // The one-line summary: "3/5 tasks done · 1 paused (waiting for answers) · 1 stopped
  // (resumable) · 2 correct · best speedups: 2.10x relu, ... · 12,345 tokens · $0.12 · 1m20s".
  std::string SummaryLine() const;

 private:
  struct Row {
    std::string name;
    TaskState state = TaskState::kQueued;
    int steps = 0;
    std::string last_status;
    std::string activity;  // what the task does now; empty between steps
    bool correct = false;
    std::optional<double> speedup;
    std::string apart;    // TaskOutcome::reported_apart()
    bool paused = false;  // stopped at a prompt waiting for a person's answer
  };
  std::string SummaryLineLocked() const;
  // Redraws the live view (terminal only); at most every 200 ms unless `force`.
  void DrawLocked(bool force);
  // Clears the live view so that a line can be printed where it was.
  void ClearLocked();
  void PrintLocked(const std::string& line);

  std::FILE* out_;
  const bool tty_;
  const int steps_per_task_;
  const std::shared_ptr<llm::Budget> budget_;
  const std::chrono::steady_clock::time_point start_;

  mutable std::mutex mu_;
  std::vector<Row> rows_;                                // guarded by mu_
  std::chrono::steady_clock::time_point last_draw_{};    // guarded by mu_
  int drawn_lines_ = 0;                                  // guarded by mu_
  bool finished_ = false;                                // guarded by mu_
  std::condition_variable tick_;                         // wakes the clock thread to end
  struct LogRedirect;
  std::unique_ptr<LogRedirect> log_redirect_;  // the log through Note() while the view is shown
  std::jthread clock_;                         // redraws every second on a terminal
};

}  // namespace kforge::exec

#endif  // KFORGE_EXEC_BENCH_PROGRESS_H_
