#include "kforge/exec/local_bench.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>

#include "kforge/exec/bench_progress.h"
#include "kforge/exec/device_slots.h"
#include "kforge/exec/placement.h"
#include "kforge/store/ranking.h"

namespace kforge::exec {

Result<BenchResult> RunLocalBench(LocalBenchRequest request, StopSignals& signals) {
  if (request.backend == nullptr || request.compiler == nullptr) {
    return InvalidArgument("RunLocalBench: backend and compiler are required");
  }
  DeviceSlots slots(
      DiscoverDevices(request.backend->target(), request.backend->RunnerDevice(), request.devices));
  std::vector<std::string> names;
  for (const auto& d : slots.devices()) names.push_back(d.name);
  if (request.out != nullptr) {
    fmt::print(request.out, "devices: {} (one timing slot each)\n", fmt::join(names, ", "));
  }
  DeviceEvaluators evaluators(*request.compiler, request.eval_options, *request.backend, slots);

  std::vector<std::string> task_names;
  for (const auto& t : request.tasks) task_names.push_back(t.name);
  std::optional<BenchProgress> progress;
  if (request.out != nullptr) {
    progress.emplace(request.out, request.tty, task_names,
                     request.options.iterations * request.options.samples, request.budget);
  }

  BenchSetup setup;
  setup.store = request.store;
  setup.run_id = request.run_id;
  setup.tasks = std::move(request.tasks);
  setup.backend = request.backend;
  setup.evaluate = evaluators.Placed(slots, signals.stop());
  setup.generation_provider = request.generation_provider;
  setup.analysis_provider = request.analysis_provider;
  setup.budget = request.budget;
  setup.options = request.options;
  setup.jobs = request.jobs;
  setup.complete_synthesis = request.complete_synthesis;
  setup.check_tasks = request.check_tasks;
  setup.observer = progress ? &*progress : nullptr;
  setup.stop = signals.stop();
  setup.abandon = signals.abandon();
  setup.cancel_calls = signals.cancel_calls();
  if (request.show_notices && progress) request.show_notices(&*progress);
  auto result = RunBench(std::move(setup));
  if (request.show_notices) request.show_notices(nullptr);
  if (progress) progress->Finish();
  if (request.out != nullptr) fmt::print(request.out, "device use: {}\n", DescribeUsage(slots));
  return result;
}

Result<BenchSummary> SummarizeBench(store::RunStore& store, const std::string& run_id,
                                    std::size_t task_count) {
  auto rows = store.ListEvaluationRows(run_id);
  if (!rows) return std::unexpected(rows.error());
  // Per task: its best candidate by the one rule (store/ranking.h), as its loop and the report
  // choose it.
  std::map<std::string, std::pair<store::Standing, Verdict>> best;
  for (const auto& row : *rows) {
    Verdict v = Verdict::FromJson(row.evaluation.verdict_json);
    const store::Standing standing{
        .correct = row.evaluation.status == store::EvaluationStatus::kCorrect,
        .held_for_review = v.held_for_review,
        .median_s = v.timing ? std::optional<double>(v.timing->median_s) : std::nullopt,
        .sample = row.candidate.sample,
        .iteration = row.candidate.iteration};
    auto it = best.find(row.task_name);
    if (it == best.end() || store::IsBetter(standing, it->second.first)) {
      v.status = row.evaluation.status;
      best[row.task_name] = {standing, std::move(v)};
    }
  }
  struct TaskSummary {
    bool correct = false;
    std::optional<double> speedup;
    std::string apart;  // why the task is reported apart, or ""
  };
  std::map<std::string, TaskSummary> by_task;
  for (const auto& [name, b] : best) {
    TaskSummary& s = by_task[name];
    s.correct = b.first.correct;
    if (!s.correct) continue;
    s.speedup = b.second.speedup_vs_eager;
    s.apart = ReportedApart(b.second);
  }
  BenchSummary out;
  out.tasks = task_count;
  for (const auto& [name, s] : by_task) {
    out.solved += s.correct ? 1 : 0;
    if (!s.apart.empty()) {
      out.apart.push_back(fmt::format("{} ({}{})", name, s.apart,
                                      s.speedup ? fmt::format(", {:.2f}x", *s.speedup) : ""));
    } else if (s.speedup) {
      out.best_speedups.emplace_back(*s.speedup, name);
    }
  }
  std::ranges::sort(out.best_speedups, std::greater<>());
  return out;
}

std::string BenchSummary::Format() const {
  std::string best;
  for (std::size_t i = 0; i < std::min<std::size_t>(5, best_speedups.size()); ++i) {
    best +=
        fmt::format("{}{:.2f}x {}", i ? ", " : "", best_speedups[i].first, best_speedups[i].second);
  }
  std::string text =
      fmt::format("\n{}/{} tasks with a correct kernel · best speedups vs eager: {}\n", solved,
                  tasks, best.empty() ? "none" : best);
  if (!apart.empty()) {
    text +=
        fmt::format("Reported apart (their speedups prove little or need a person's look): {}\n",
                    fmt::join(apart, ", "));
  }
  return text;
}

}  // namespace kforge::exec
