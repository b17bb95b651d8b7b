// BenchRunner: many tasks of a suite synthesized at once in ONE run store (`kforge bench`, local
// executor).
//
// Each task runs the synthesis loop (synth::Synthesizer, the loop of `kforge run`) on one of
// `jobs` task threads; all loops share the run's providers (their rate and concurrency limits
// bound the LLM calls in flight), its budget, the compile service's CPU pool and the device slots
// (one timing slot per device, exec/placement.h). Each task's LLM call streams are prefixed with
// its name, so call keys stay apart and a resumed bench answers every finished call from the
// store.
//
// Stopping: once `stop` is requested no task starts and no loop starts a new step; steps in flight
// finish (or are abandoned through `abandon`/`cancel_calls`), and the result is `interrupted`.
// Resume: run the same tasks against the same run id and store (Synthesizer's resume rules).
#ifndef KFORGE_EXEC_BENCH_RUNNER_H_
#define KFORGE_EXEC_BENCH_RUNNER_H_

#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/llm/budget.h"
#include "kforge/llm/call_failure.h"
#include "kforge/llm/cancellation.h"
#include "kforge/llm/provider.h"
#include "kforge/prompt/prompt_renderer.h"
#include "kforge/store/run_store.h"
#include "kforge/synth/synthesizer.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge::exec {

enum class TaskState { kQueued, kRunning, kDone, kInterrupted, kFailed };
std::string_view TaskStateName(TaskState state);

// One task's end.
// Why a task whose best candidate has verdict `v` is reported apart from the others — a degenerate
// task, or a timing held for a person's review — or "" when it is not (or `v` is not correct).
std::string ReportedApart(const Verdict& v);

struct TaskOutcome {
  std::string task_name;
  TaskState state = TaskState::kQueued;
  std::optional<synth::EvaluatedCandidate> best;
  int steps = 0;
  std::string stop_reason;  // the loop's, or the error for kFailed
  // The task's loop ended on a failed LLM call (synth::SynthesisResult::call_failure): kTransient
  // leaves it kInterrupted (resumable), kPermanent makes it kFailed with the call's message.
  std::optional<llm::CallFailureKind> call_failure;
  bool awaiting_answer = false;  // stopped at a prompt waiting for a person's answer (inbox)

  bool correct() const { return best && best->correct(); }
  // The best candidate's speedup against PyTorch eager, when it is correct and was timed.
  std::optional<double> speedup() const;
  // Why this task's result is reported apart from the others (a degenerate task, or a timing
  // held for a person's review), or "" when it is not.
  std::string reported_apart() const;
};

// Receives the bench's events (progress display, tests). Calls come from task threads, one at a
// time (the runner serialises them).
class BenchObserver {
 public:
  virtual ~BenchObserver() = default;
  virtual void OnTaskStarted(std::size_t /*task*/) {}
  virtual void OnStep(std::size_t /*task*/, const synth::ProgressEvent& /*event*/) {}
  // What the task is doing now (core/activity.h: "generating", "compiling", ...); empty between
  // steps.
  virtual void OnActivity(std::size_t /*task*/, std::string_view /*activity*/) {}
  virtual void OnTaskFinished(std::size_t /*task*/, const TaskOutcome& /*outcome*/) {}
};

struct BenchSetup {
  store::RunStore* store = nullptr;  // required; the run row must exist
  std::string run_id;
  std::vector<Task> tasks;
  const Backend* backend = nullptr;  // required
  synth::EvaluateFn evaluate;        // required: placement on device slots (or a test double)
  std::shared_ptr<llm::Provider> generation_provider;  // required
  std::shared_ptr<llm::Provider> analysis_provider;    // null: the generation provider
  std::shared_ptr<llm::Budget> budget;
  std::optional<PromptRenderer> renderer;  // loaded once, shared by every task; unset: default
  synth::SynthesisOptions options;         // per task
  int jobs = 0;                            // tasks at once; 0: min(tasks, 16)
  // The composition root's per-task parts of each task's synthesis setup (its profile pass and
  // device facts, app::Setup::CompleteSynthesis); unset: none.
  std::function<void(const Task&, synth::SynthesisSetup&)> complete_synthesis;
  BenchObserver* observer = nullptr;       // optional
  // Called once with every task before any starts (eval/task_check.h: each task run once); its
  // error ends RunBench before the first prompt. Unset: not checked.
  std::function<Status(const std::vector<Task>&)> check_tasks;
  std::stop_token stop;
  std::stop_token abandon;
  llm::CancellationToken cancel_calls;
};

struct BenchResult {
  std::vector<TaskOutcome> tasks;  // in suite order
  bool interrupted = false;        // a task did not finish: stopped, failed LLM call or store error
  int awaiting_answer = 0;         // tasks stopped at a prompt waiting for a person's answer
  int correct = 0;
  int steps = 0;
};

// Errors: a missing dependency in the setup. A task whose loop fails (a store error) is a kFailed
// outcome, not an error of the bench.
Result<BenchResult> RunBench(BenchSetup setup);

}  // namespace kforge::exec

#endif  // KFORGE_EXEC_BENCH_RUNNER_H_
