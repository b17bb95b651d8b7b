// BenchProgress: the live view of a bench. On a terminal: an overall bar with the ETA, the correct
// count, tokens and money so far, the best speedups, and one line per running task (redrawn at
// most every 200 ms). Elsewhere (a log file, CI): one plain line per finished step and per
// finished task.
//
// The ETA counts every task as samples × iterations steps (a task that ends early counts as
// done), so it is an upper bound that tightens as tasks finish.
#ifndef KFORGE_EXEC_BENCH_PROGRESS_H_
#define KFORGE_EXEC_BENCH_PROGRESS_H_

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kforge/exec/bench_runner.h"
#include "kforge/llm/budget.h"

namespace kforge::exec {

class BenchProgress : public BenchObserver {
 public:
  // `out` receives the view; `tty` picks the live view. `budget` (may be null) gives tokens and
  // money. `steps_per_task` is samples × iterations.
  BenchProgress(std::FILE* out, bool tty, std::vector<std::string> task_names,
                int steps_per_task, std::shared_ptr<llm::Budget> budget);

  void OnTaskStarted(std::size_t task) override;
  void OnStep(std::size_t task, const synth::ProgressEvent& event) override;
  void OnTaskFinished(std::size_t task, const TaskOutcome& outcome) override;
  // Draws the final state (terminal) once the bench has ended.
  void Finish();

  // The one-line summary: "3/5 tasks done · 2 correct · best speedups 2.1x relu, ... · 12,345
  // tokens · $0.12 · 1m20s".
  std::string SummaryLine() const;

 private:
  struct Row {
    std::string name;
    TaskState state = TaskState::kQueued;
    int steps = 0;
    std::string last_status;
    bool correct = false;
    std::optional<double> speedup;
    std::string apart;  // TaskOutcome::reported_apart()
  };
  void Draw(bool force);

  std::FILE* out_;
  bool tty_;
  std::vector<Row> rows_;
  int steps_per_task_;
  std::shared_ptr<llm::Budget> budget_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
  int drawn_lines_ = 0;
};

}  // namespace kforge::exec

#endif  // KFORGE_EXEC_BENCH_PROGRESS_H_
