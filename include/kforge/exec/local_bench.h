// A bench on this machine: the suite's tasks at once through RunBench, evaluations placed on the
// target's devices (one timing slot and one Evaluator each, exec/placement.h), live progress on a
// terminal, and the summary the command prints at the end (SummarizeBench).
//
// Ownership: the request borrows its store, backend and compiler; they must outlive the call.
#ifndef KFORGE_EXEC_LOCAL_BENCH_H_
#define KFORGE_EXEC_LOCAL_BENCH_H_

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/eval/compile_service.h"
#include "kforge/eval/evaluator.h"
#include "kforge/exec/bench_progress.h"
#include "kforge/exec/bench_runner.h"
#include "kforge/exec/stop_signals.h"
#include "kforge/llm/budget.h"
#include "kforge/llm/provider.h"
#include "kforge/store/run_store.h"
#include "kforge/synth/synthesizer.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge::exec {

struct LocalBenchRequest {
  store::RunStore* store = nullptr;  // required; the run row must exist
  std::string run_id;
  std::vector<Task> tasks;
  const Backend* backend = nullptr;                    // required
  CompileService* compiler = nullptr;                  // required
  EvalOptions eval_options;                            // each device's Evaluator's
  std::shared_ptr<llm::Provider> generation_provider;  // required
  std::shared_ptr<llm::Provider> analysis_provider;    // null: the generation provider
  std::shared_ptr<llm::Budget> budget;
  synth::SynthesisOptions options;  // per task
  int jobs = 0;                     // tasks at once; 0: min(tasks, 16)
  int devices = 0;                  // devices used at most; 0: all of the target's here
  // The composition root's per-task parts of each synthesis setup (profile pass, device facts).
  std::function<void(const Task&, synth::SynthesisSetup&)> complete_synthesis;
  // Runs every task once before the first prompt (BenchSetup::check_tasks); null: no check.
  std::function<Status(const std::vector<Task>&)> check_tasks;
  // Called with the live view when it is shown and with null when it is gone, so that notices
  // printed meanwhile go through it (a line written beside it would be drawn over).
  std::function<void(BenchProgress*)> show_notices;
  // Where the device lines and the live view go; null: nowhere.
  std::FILE* out = nullptr;
  bool tty = false;  // a terminal: the live view; else plain lines
};

// Errors: a missing dependency. Stopping goes through `signals`.
Result<BenchResult> RunLocalBench(LocalBenchRequest request, StopSignals& signals);

// What the end of a bench says, from its store: tasks solved, the best speedups, and the tasks
// reported apart (degenerate, or held for review). Each task's best candidate is chosen by the
// one rule of the loop and the report (store/ranking.h).
struct BenchSummary {
  std::size_t tasks = 0;
  int solved = 0;
  std::vector<std::pair<double, std::string>>
      best_speedups;               // (speedup vs eager, task), best first
  std::vector<std::string> apart;  // "task (why, 12.30x)"
  std::string Format() const;      // the summary's lines
};
Result<BenchSummary> SummarizeBench(store::RunStore& store, const std::string& run_id,
                                    std::size_t task_count);

}  // namespace kforge::exec

#endif  // KFORGE_EXEC_LOCAL_BENCH_H_
