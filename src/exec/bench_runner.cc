#include "kforge/exec/bench_runner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "kforge/core/activity.h"

namespace kforge::exec {

std::string_view TaskStateName(TaskState state) {
  switch (state) {
    case TaskState::kQueued:
      return "queued";
    case TaskState::kRunning:
      return "running";
    case TaskState::kDone:
      return "done";
    case TaskState::kInterrupted:
      return "interrupted";
    case TaskState::kFailed:
      return "failed";
  }
  return "?";
}

std::optional<double> TaskOutcome::speedup() const {
  if (!correct()) return std::nullopt;
  return best->verdict.speedup_vs_eager;
}

std::string ReportedApart(const Verdict& v) {
  if (v.status != EvalStatus::kCorrect) return "";
  if (v.degenerate.any()) return "degenerate task: " + v.degenerate.Describe();
  if (v.held_for_review) return "held for review: " + v.review_reason;
  return "";
}

std::string TaskOutcome::reported_apart() const {
  return best ? ReportedApart(best->verdict) : "";
}

Result<BenchResult> RunBench(BenchSetup setup) {
  if (setup.store == nullptr || setup.backend == nullptr || !setup.evaluate ||
      !setup.generation_provider || setup.run_id.empty()) {
    return Internal("RunBench: store, run id, backend, evaluate and generation provider are required");
  }
  const std::size_t n = setup.tasks.size();
  BenchResult result;
  result.tasks.resize(n);
  for (std::size_t i = 0; i < n; ++i) result.tasks[i].task_name = setup.tasks[i].name;
  if (n == 0) return result;
  if (setup.check_tasks) KFORGE_RETURN_IF_ERROR(setup.check_tasks(setup.tasks));
  // One renderer (templates read once) for every task.
  const PromptRenderer renderer = setup.renderer ? *setup.renderer : PromptRenderer();
  const std::size_t jobs =
      setup.jobs > 0 ? static_cast<std::size_t>(setup.jobs) : std::min<std::size_t>(n, 16);

  std::mutex observer_mu;
  auto notify = [&](auto&& fn) {
    if (setup.observer == nullptr) return;
    std::lock_guard lock(observer_mu);
    fn(*setup.observer);
  };

  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (;;) {
      if (setup.stop.stop_requested()) return;
      const std::size_t i = next.fetch_add(1);
      if (i >= n) return;
      TaskOutcome& outcome = result.tasks[i];
      outcome.state = TaskState::kRunning;
      notify([&](BenchObserver& o) { o.OnTaskStarted(i); });
      // What the task's loop does (generating, compiling, ...) goes to the observer.
      ActivitySinkGuard activities(std::make_shared<const std::function<void(std::string_view)>>(
          [&notify, i](std::string_view activity) {
            notify([&](BenchObserver& o) { o.OnActivity(i, activity); });
          }));
      synth::SynthesisSetup s;
      s.store = setup.store;
      s.run_id = setup.run_id;
      s.task = setup.tasks[i];
      s.backend = setup.backend;
      s.evaluate = setup.evaluate;
      s.generation_provider = setup.generation_provider;
      s.analysis_provider = setup.analysis_provider;
      s.budget = setup.budget;
      s.renderer = renderer;
      s.options = setup.options;
      s.stop = setup.stop;
      s.abandon = setup.abandon;
      s.cancel_calls = setup.cancel_calls;
      s.stream_prefix = setup.tasks[i].name + "/";
      s.best_dir = setup.store->run_dir() / "best" / setup.tasks[i].name;
      s.on_progress = [&, i](const synth::ProgressEvent& e) {
        notify([&](BenchObserver& o) { o.OnStep(i, e); });
      };
      if (setup.complete_synthesis) setup.complete_synthesis(setup.tasks[i], s);
      auto run = synth::Synthesizer(std::move(s)).Run();
      if (!run) {
        outcome.state = TaskState::kFailed;
        outcome.stop_reason = run.error().message;
        spdlog::error("bench: task {} failed: {}", outcome.task_name, outcome.stop_reason);
      } else {
        outcome.state = run->interrupted ? TaskState::kInterrupted : TaskState::kDone;
        outcome.best = run->best;
        outcome.steps = run->steps;
        outcome.stop_reason = run->stop_reason;
        outcome.call_failure = run->call_failure;
        if (run->call_failure == llm::CallFailureKind::kPermanent) {
          outcome.state = TaskState::kFailed;
          outcome.stop_reason = run->call_error;
        }
        outcome.awaiting_answer = run->interrupted && run->awaiting_answer;
      }
      notify([&](BenchObserver& o) { o.OnTaskFinished(i, outcome); });
    }
  };
  std::vector<std::jthread> threads;
  for (std::size_t t = 0; t < std::min(jobs, n); ++t) threads.emplace_back(worker);
  threads.clear();  // joins

  for (const TaskOutcome& o : result.tasks) {
    if (o.state != TaskState::kDone) {
      result.interrupted = true;
    }
    if (o.correct()) ++result.correct;
    if (o.awaiting_answer) ++result.awaiting_answer;
    result.steps += o.steps;
  }
  return result;
}

}  // namespace kforge::exec
