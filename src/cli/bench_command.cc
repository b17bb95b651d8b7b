#include "bench_command.h"
#include "exit_codes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "exit_codes.h"
#include "kforge/core/files.h"
#include "kforge/eval/compile_service.h"
#include "kforge/eval/task_check.h"
#include "kforge/exec/bench_progress.h"
#include "kforge/exec/bench_runner.h"
#include "kforge/exec/device_slots.h"
#include "kforge/exec/placement.h"
#include "kforge/exec/slurm_executor.h"
#include "kforge/exec/stop_signals.h"
#include "kforge/exec/store_merge.h"
#include "kforge/store/ranking.h"
#include "kforge/store/run_store.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"
#include "run_support.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// Exit codes (exit_codes.h), stated in --help.
constexpr int kExitAllCorrect = kExitOk;         // every task has a correct kernel
constexpr int kExitSome = kExitNotAll;          // some task has none, or the bench was stopped
constexpr int kExitUsage = kExitBadInput;       // bad input, or the model refused for good
constexpr int kExitInfra = kExitKforgeFailed;   // KForge, the store or the cluster failed
constexpr int kExitPaused = kExitProviderPause; // the provider failed: tasks resumable
constexpr int kConfigVersion = 1;

// The configuration of a bench, stored as the run's config_json (and, for Slurm, in
// <run_dir>/slurm/bench.json for the array elements).
struct BenchArgs {
  std::string suite;
  std::string target;
  std::string model;
  std::string analysis_model;
  int iterations = 3;
  int samples = 1;
  int jobs = 0;
  int devices = 0;
  std::string executor = "local";
  std::string replay;
  std::string record;
  std::string out;
  std::int64_t max_tokens = 0;
  double max_cost = 0;
  int max_time_s = 0;
  std::vector<std::string> models;
  // Slurm
  std::string partition;
  int gpus_per_task = -1;  // -1: 1 for GPU targets, 0 for CPU targets
  int cpus_per_task = 2;
  int max_resubmits = 2;
  std::string time_limit;
  std::vector<std::string> sbatch_args;
  int poll_ms = 2000;
  bool time = true;  // time every correct candidate (--no-time: correctness only)
  std::string replay_match = "exact";
  std::string record_note;
  bool inbox_wait = false;
  // Start without this machine having the target (to render and record an inbox conversation
  // elsewhere; every evaluation then fails here).
  bool skip_target_check = false;
};

nlohmann::json ToJson(const BenchArgs& a) {
  nlohmann::json j{{"config_version", kConfigVersion},
                   {"kind", "bench"},
                   {"suite", a.suite},
                   {"target", a.target},
                   {"iterations", a.iterations},
                   {"samples", a.samples},
                   {"jobs", a.jobs},
                   {"devices", a.devices},
                   {"executor", a.executor},
                   {"max_tokens", a.max_tokens},
                   {"max_cost", a.max_cost},
                   {"max_time_s", a.max_time_s},
                   {"partition", a.partition},
                   {"gpus_per_task", a.gpus_per_task},
                   {"cpus_per_task", a.cpus_per_task},
                   {"max_resubmits", a.max_resubmits},
                   {"time_limit", a.time_limit},
                   {"sbatch_args", a.sbatch_args},
                   {"poll_ms", a.poll_ms},
                   {"time", a.time}};
  WriteModelSource(j, a);
  return j;
}

Result<BenchArgs> ParseBenchArgs(const std::string& text, const std::string& where) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || j.value("config_version", 0) != kConfigVersion ||
      j.value("kind", "") != "bench") {
    return ParseError(
        fmt::format("{}: not a `kforge bench` configuration of version {}", where, kConfigVersion));
  }
  try {
    BenchArgs a;
    a.suite = j.at("suite").get<std::string>();
    a.target = j.at("target").get<std::string>();
    a.iterations = j.value("iterations", 3);
    a.samples = j.value("samples", 1);
    a.jobs = j.value("jobs", 0);
    a.devices = j.value("devices", 0);
    a.executor = j.value("executor", "local");
    a.max_tokens = j.value("max_tokens", std::int64_t{0});
    a.max_cost = j.value("max_cost", 0.0);
    a.max_time_s = j.value("max_time_s", 0);
    a.partition = j.value("partition", "");
    a.gpus_per_task = j.value("gpus_per_task", -1);
    a.cpus_per_task = j.value("cpus_per_task", 2);
    a.max_resubmits = j.value("max_resubmits", 2);
    a.time_limit = j.value("time_limit", "");
    a.sbatch_args = j.value("sbatch_args", std::vector<std::string>{});
    a.poll_ms = j.value("poll_ms", 2000);
    a.time = j.value("time", true);
    ReadModelSource(j, a);
    return a;
  } catch (const nlohmann::json::exception& e) {
    return ParseError(fmt::format("{}: {}", where, e.what()));
  }
}

std::string CommandLine(const BenchArgs& a) {
  std::string line =
      fmt::format("kforge bench {} --target {} --model {} --iterations {} --samples {}", a.suite,
                  a.target, a.model, a.iterations, a.samples);
  if (a.executor != "local") line += " --executor " + a.executor;
  if (!a.replay.empty()) line += " --replay " + a.replay;
  if (!a.record.empty()) line += " --record " + a.record;
  if (a.jobs > 0) line += fmt::format(" --jobs {}", a.jobs);
  if (!a.time) line += " --no-time";
  if (a.replay_match != "exact") line += " --replay-match " + a.replay_match;
  return line;
}

int Fail(const char* who, const std::string& message, int code) {
  fmt::print(stderr, "{}: {}\n", who, message);
  return code;
}

// Where the signal watcher's notices go: through the live view while one is shown (a line
// written beside it would be drawn over), else to stderr.
class Notices {
 public:
  void Print(const std::string& line) {
    std::lock_guard lock(mu_);
    if (progress_ != nullptr) {
      progress_->Note(line);
    } else {
      fmt::print(stderr, "{}\n", line);
    }
  }
  void Route(exec::BenchProgress* progress) {
    std::lock_guard lock(mu_);
    progress_ = progress;
  }

 private:
  std::mutex mu_;
  exec::BenchProgress* progress_ = nullptr;  // guarded by mu_
};

// Everything a bench needs that does not depend on the executor.
struct Prepared {
  Target target;
  Suite suite;
  std::unique_ptr<Backend> backend;
};

Result<Prepared> Prepare(const BenchArgs& args, bool probe) {
  auto target = Target::Parse(args.target);
  if (!target) return std::unexpected(target.error());
  auto suite = LoadSuite(args.suite);
  if (!suite) return std::unexpected(suite.error());
  if (suite->tasks.empty()) {
    return InvalidArgument(fmt::format("suite {} has no tasks", args.suite));
  }
  if (args.iterations < 1 || args.samples < 1) {
    return InvalidArgument("--iterations and --samples must be at least 1");
  }
  auto backend = NewBackend(*target);
  if (probe) KFORGE_RETURN_IF_ERROR(CheckRunsHere(*backend));
  return Prepared{*target, std::move(*suite), std::move(backend)};
}

llm::BudgetLimits Limits(const BenchArgs& args, int share) {
  llm::BudgetLimits limits;
  if (args.max_tokens > 0) limits.max_tokens = args.max_tokens / std::max(1, share);
  if (args.max_cost > 0) limits.max_usd = args.max_cost / std::max(1, share);
  return limits;
}

synth::SynthesisOptions SynthOptions(const BenchArgs& args) {
  synth::SynthesisOptions o;
  o.iterations = args.iterations;
  o.samples = args.samples;
  if (args.max_time_s > 0) o.max_wall_time = std::chrono::seconds(args.max_time_s);
  return o;
}

// Runs `tasks` on this machine into `store` (run `run_id`). Returns the bench result.
Result<exec::BenchResult> RunLocal(const BenchArgs& args, Prepared& prepared,
                                   std::vector<Task> tasks, store::RunStore& store,
                                   const std::string& run_id, bool resuming, int budget_share,
                                   exec::StopSignals& signals, bool show_progress,
                                   Notices* notices = nullptr) {
  auto budget = std::make_shared<llm::Budget>(Limits(args, budget_share));
  auto providers = MakeProviders(ProviderArgsOf(args), resuming, budget);
  if (!providers) return std::unexpected(providers.error());

  exec::DeviceSlots slots(
      exec::DiscoverDevices(prepared.target, prepared.backend->RunnerDevice(), args.devices));
  std::vector<std::string> names;
  for (const auto& d : slots.devices()) names.push_back(d.name);
  fmt::print("devices: {} (one timing slot each)\n", fmt::join(names, ", "));
  CompileService compiler;
  EvalOptions eval_options;
  eval_options.time = args.time;
  eval_options.prepare_next = true;
  exec::DeviceEvaluators evaluators(compiler, eval_options, *prepared.backend, slots);

  std::vector<std::string> task_names;
  for (const auto& t : tasks) task_names.push_back(t.name);
  const bool tty = show_progress && ::isatty(STDOUT_FILENO) != 0;
  exec::BenchProgress progress(stdout, tty, task_names, args.iterations * args.samples, budget);
  if (notices != nullptr && show_progress) notices->Route(&progress);

  exec::BenchSetup setup;
  setup.store = &store;
  setup.run_id = run_id;
  setup.tasks = std::move(tasks);
  setup.backend = prepared.backend.get();
  setup.evaluate = evaluators.Placed(slots, signals.stop());
  setup.generation_provider = providers->generation;
  setup.analysis_provider = providers->analysis;
  setup.budget = budget;
  setup.options = SynthOptions(args);
  setup.jobs = args.jobs;
  setup.observer = show_progress ? &progress : nullptr;
  if (!args.skip_target_check) {
    setup.check_tasks = [&prepared, &eval_options](const std::vector<Task>& all) {
      return CheckTasksRun(all, *prepared.backend, eval_options);
    };
  }
  setup.stop = signals.stop();
  setup.abandon = signals.abandon();
  setup.cancel_calls = signals.cancel_calls();
  auto result = exec::RunBench(std::move(setup));
  if (notices != nullptr) notices->Route(nullptr);
  if (show_progress) progress.Finish();
  fmt::print("device use: {}\n", exec::DescribeUsage(slots));
  return result;
}

// Per task of the run: whether a correct candidate exists and its best speedup vs eager.
struct TaskSummary {
  bool correct = false;
  std::optional<double> speedup;
  std::string apart;  // why the task is reported apart (degenerate, held for review), or ""
};

// Each task's best candidate by the one rule (store/ranking.h), as its loop and the report
// choose it.
Result<std::map<std::string, TaskSummary>> Summarize(store::RunStore& store,
                                                     const std::string& run_id) {
  auto rows = store.ListEvaluationRows(run_id);
  if (!rows) return std::unexpected(rows.error());
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
  std::map<std::string, TaskSummary> out;
  for (const auto& [name, b] : best) {
    TaskSummary& s = out[name];
    s.correct = b.first.correct;
    if (!s.correct) continue;
    s.speedup = b.second.speedup_vs_eager;
    s.apart = exec::ReportedApart(b.second);
  }
  return out;
}

int PrintSummary(store::RunStore& store, const std::string& run_id, std::size_t task_count,
                 bool interrupted, const fs::path& run_dir, const char* who) {
  auto summary = Summarize(store, run_id);
  if (!summary) return Fail(who, summary.error().message, kExitInfra);
  int correct = 0;
  std::vector<std::pair<double, std::string>> speedups;
  std::vector<std::string> apart;
  for (const auto& [name, s] : *summary) {
    correct += s.correct ? 1 : 0;
    if (!s.apart.empty()) {
      apart.push_back(fmt::format("{} ({}{})", name, s.apart,
                                  s.speedup ? fmt::format(", {:.2f}x", *s.speedup) : ""));
    } else if (s.speedup) {
      speedups.emplace_back(*s.speedup, name);
    }
  }
  std::ranges::sort(speedups, std::greater<>());
  std::string best;
  for (std::size_t i = 0; i < std::min<std::size_t>(5, speedups.size()); ++i) {
    best += fmt::format("{}{:.2f}x {}", i ? ", " : "", speedups[i].first, speedups[i].second);
  }
  fmt::print("\n{}/{} tasks with a correct kernel · best speedups vs eager: {}\n", correct,
             task_count, best.empty() ? "none" : best);
  if (!apart.empty()) {
    fmt::print("Reported apart (their speedups prove little or need a person's look): {}\n",
               fmt::join(apart, ", "));
  }
  fmt::print("Run stored in {}. Its report: kforge report {}\n", run_dir.string(),
             run_dir.string());
  if (interrupted) {
    fmt::print("The bench did not finish; continue it with: kforge resume {}\n", run_dir.string());
    return kExitSome;
  }
  return static_cast<std::size_t>(correct) == task_count ? kExitAllCorrect : kExitSome;
}

fs::path SelfExe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("kforge") : p;
}

// The Slurm executor: one array element per unfinished task, merged back as each ends.
int RunSlurm(const BenchArgs& args, Prepared& prepared, store::RunStore& store,
             const std::string& run_id, const fs::path& run_dir, exec::StopSignals& signals,
             const char* who) {
  const fs::path work = run_dir / "slurm";
  if (auto made = MakeDirs(work); !made) return Fail(who, made.error().message, kExitInfra);
  nlohmann::json config = ToJson(args);
  config["run_id"] = run_id;
  if (auto w = WriteFile(work / "bench.json", config.dump(2)); !w) {
    return Fail(who, w.error().message, kExitInfra);
  }
  exec::SlurmOptions options;
  options.work_dir = work;
  options.element_argv = {SelfExe().string(), "bench-task", run_dir.string()};
  options.job_name = "kforge-" + run_id;
  options.partition = args.partition;
  options.gpus_per_element =
      args.gpus_per_task >= 0 ? args.gpus_per_task : (prepared.backend->UsesAccelerator() ? 1 : 0);
  options.cpus_per_element = args.cpus_per_task;
  options.time_limit = args.time_limit;
  options.extra_sbatch_args = args.sbatch_args;
  options.max_resubmits = args.max_resubmits;
  options.poll_interval = std::chrono::milliseconds(args.poll_ms);
  exec::SlurmExecutor executor(options);

  const std::size_t n = prepared.suite.tasks.size();
  std::vector<int> indices;
  int merge_errors = 0;
  auto merge = [&](int i) {
    const fs::path dir = executor.ElementDir(i);
    if (!fs::exists(dir / "run.sqlite")) return;
    auto from = store::RunStore::Open(dir);
    if (!from) {
      ++merge_errors;
      fmt::print(stderr, "{}: element {}: {}\n", who, i, from.error().message);
      return;
    }
    auto counts = exec::MergeRun(**from, store, run_id);
    if (!counts) {
      ++merge_errors;
      fmt::print(stderr, "{}: merging element {}: {}\n", who, i, counts.error().message);
    }
  };
  for (std::size_t i = 0; i < n; ++i) {
    auto marker = ReadFile(executor.MarkerPath(static_cast<int>(i)));
    if (marker && marker->find("\"done\"") != std::string::npos) {
      merge(static_cast<int>(i));  // finished in an earlier part of this run
      continue;
    }
    indices.push_back(static_cast<int>(i));
  }
  fmt::print("slurm: {} element(s) to run ({} GPU(s) each), {} already done\n", indices.size(),
             options.gpus_per_element, n - indices.size());
  int finished = 0;
  bool interrupted = false;
  auto results = executor.Run(
      indices,
      [&](int i, exec::ElementEnd end) {
        merge(i);
        ++finished;
        if (end != exec::ElementEnd::kDone) interrupted = true;
        fmt::print("[{}] element {}: {} · {}/{} elements ended\n",
                   prepared.suite.tasks[static_cast<std::size_t>(i)].name, i,
                   end == exec::ElementEnd::kDone          ? "done"
                   : end == exec::ElementEnd::kInterrupted ? "interrupted"
                                                           : "lost",
                   finished, indices.size());
        std::fflush(stdout);
      },
      signals.stop());
  if (!results) {
    (void)store.FinishRun(run_id, store::RunStatus::kFailed);
    return Fail(who, results.error().message, kExitInfra);
  }
  if (results->size() != indices.size() || merge_errors > 0) interrupted = true;
  (void)store.FinishRun(run_id,
                        interrupted ? store::RunStatus::kInterrupted : store::RunStatus::kFinished);
  return PrintSummary(store, run_id, n, interrupted, run_dir, who);
}

int RunBenchRun(const BenchArgs& args, const fs::path& run_dir, const std::string& run_id,
                bool resuming, const std::string& command_line, const char* who) {
  if (args.executor != "local" && args.executor != "slurm") {
    return Fail(who, fmt::format("--executor must be local or slurm, not '{}'", args.executor),
                kExitUsage);
  }
  if (args.executor == "slurm" && !args.record.empty()) {
    return Fail(who,
                "--record works with the local executor only (one process owns the cassette); "
                "record locally, then replay on the cluster with --replay",
                kExitUsage);
  }
  // The submitting host of a Slurm bench need not have the target's device.
  auto prepared = Prepare(args, /*probe=*/args.executor == "local" && !args.skip_target_check);
  if (!prepared) {
    return Fail(who, prepared.error().message,
                prepared.error().code == ErrorCode::kUnavailable ? kExitInfra : kExitUsage);
  }
  // A bench that ends before its first step (an unknown model, a broken task) leaves no run
  // folder behind, when it made the folder.
  const bool made_dir = !resuming && !fs::exists(run_dir);
  auto store = store::RunStore::Open(run_dir);
  if (!store) return Fail(who, store.error().message, kExitInfra);
  if (!resuming) {
    store::RunRecord run;
    run.id = run_id;
    run.kind = store::RunKind::kBench;
    run.command_line = command_line;
    run.config_json = ToJson(args).dump();
    if (auto added = (*store)->AddRun(run); !added)
      return Fail(who, added.error().message, kExitInfra);
  }
  fmt::print("{} bench of {} task(s) from {} on {} with {} ({} executor) — run {}\n",
             resuming ? "resuming" : "starting", prepared->suite.tasks.size(), args.suite,
             args.target, args.model, args.executor, run_dir.string());
  auto notices = std::make_shared<Notices>();
  exec::StopSignals signals([notices, run_dir](int count) {
    notices->Print(
        count == 1
            ? fmt::format("stopping (Ctrl-C): no new step starts; evaluations running on a device "
                          "and LLM calls in flight finish, evaluations still waiting for a device "
                          "are left for `kforge resume {}` (Ctrl-C again to abandon everything)",
                          run_dir.string())
            : "abandoning the steps in flight (Ctrl-C again)");
  });
  if (args.executor == "slurm") {
    return RunSlurm(args, *prepared, **store, run_id, run_dir, signals, who);
  }
  std::vector<Task> tasks = prepared->suite.tasks;
  auto result = RunLocal(args, *prepared, std::move(tasks), **store, run_id, resuming, 1, signals,
                         /*show_progress=*/true, notices.get());
  if (!result) {
    // Nothing ran: the providers could not be built, or a task cannot run.
    (void)(*store)->FinishRun(run_id, store::RunStatus::kFailed);
    if (made_dir) {
      store->reset();
      std::error_code ec;
      fs::remove_all(run_dir, ec);
    }
    return Fail(who, result.error().message,
                result.error().code == ErrorCode::kInternal ? kExitInfra : kExitUsage);
  }
  const bool interrupted = result->interrupted || signals.stop().stop_requested();
  // Tasks whose loop ended on a failed LLM call: paused by the provider (resumable), or ended
  // because the model refused for good.
  std::vector<const exec::TaskOutcome*> paused;
  std::vector<const exec::TaskOutcome*> refused;
  for (const auto& t : result->tasks) {
    if (t.call_failure == llm::CallFailureKind::kTransient) paused.push_back(&t);
    if (t.call_failure == llm::CallFailureKind::kPermanent) refused.push_back(&t);
  }
  if (interrupted) {
    // What happened, before how to continue (PrintSummary).
    int done = 0;
    int stopped = 0;
    int never = 0;
    for (const auto& t : result->tasks) {
      done += t.state == exec::TaskState::kDone ? 1 : 0;
      stopped += t.state == exec::TaskState::kInterrupted || t.state == exec::TaskState::kFailed;
      never += t.state == exec::TaskState::kQueued ? 1 : 0;
    }
    fmt::print("\n{}: {} task(s) done, {} stopped before their end, {} never started\n",
               signals.signal_number() != 0 ? "Stopped by a signal" : "Stopped", done, stopped,
               never);
  }
  const bool failed = !refused.empty() && paused.empty();
  (void)(*store)->FinishRun(run_id, failed        ? store::RunStatus::kFailed
                                    : interrupted ? store::RunStatus::kInterrupted
                                                  : store::RunStatus::kFinished);
  const int code =
      PrintSummary(**store, run_id, prepared->suite.tasks.size(), interrupted, run_dir, who);
  if (code == kExitInfra) return code;
  for (const exec::TaskOutcome* t : refused) {
    fmt::print(stderr, "{}: task {}: the model cannot answer, and waiting will not change that: "
               "{}\n", who, t->task_name, t->stop_reason);
  }
  if (!paused.empty()) {
    std::vector<std::string> names;
    for (const exec::TaskOutcome* t : paused) names.push_back(t->task_name);
    fmt::print(stderr, "{}: the LLM provider failed after its retries: {}\n", who,
               paused.front()->stop_reason);
    fmt::print("Paused by the provider, not finished: {} task(s) ({}). When it answers again, "
               "continue them: kforge resume {}\n",
               paused.size(), fmt::join(names, ", "), run_dir.string());
    return kExitPaused;
  }
  if (!refused.empty()) {
    fmt::print("The bench stopped (stored as failed). Fix what the message says, then continue "
               "it: kforge resume {}\n",
               run_dir.string());
    return kExitUsage;
  }
  if (interrupted && !args.replay.empty() && !signals.stop().stop_requested()) {
    fmt::print(stderr,
               "{}: the replay of {} stopped before the bench's end (each stopped task's line "
               "above says where). A cassette recorded on another machine needs --replay-match "
               "numbers; otherwise give the recording's command.\n",
               who, args.replay);
    return kExitUsage;
  }
  if (result->awaiting_answer > 0 && !signals.stop().stop_requested()) {
    fmt::print(
        "Paused: {} task(s) wait for your answers; write each answer where its line above "
        "says, then continue with: kforge resume {}\n",
        result->awaiting_answer, run_dir.string());
    return kExitAnswerPause;
  }
  return code;
}

// One Slurm array element: task INDEX of the bench in RUN_DIR, into its own store.
int RunBenchTask(const std::string& run_dir_arg, int index) {
  const char* who = "kforge bench-task";
  const fs::path run_dir = fs::absolute(run_dir_arg);
  auto text = ReadFile(run_dir / "slurm" / "bench.json");
  if (!text) return Fail(who, text.error().message, kExitUsage);
  auto args = ParseBenchArgs(*text, (run_dir / "slurm" / "bench.json").string());
  if (!args) return Fail(who, args.error().message, kExitUsage);
  const std::string run_id = nlohmann::json::parse(*text).value("run_id", "");
  auto prepared = Prepare(*args, /*probe=*/true);
  if (!prepared) return Fail(who, prepared.error().message, kExitInfra);
  const auto n = prepared->suite.tasks.size();
  if (index < 0 || static_cast<std::size_t>(index) >= n) {
    return Fail(who, fmt::format("task index {} is not in 0..{}", index, n - 1), kExitUsage);
  }
  const fs::path dir = run_dir / "slurm" / "tasks" / std::to_string(index);
  auto store = store::RunStore::Open(dir);
  if (!store) return Fail(who, store.error().message, kExitInfra);
  const bool resuming = static_cast<bool>((*store)->GetRun(run_id));
  if (!resuming) {
    store::RunRecord run;
    run.id = run_id;
    run.kind = store::RunKind::kBench;
    run.command_line = fmt::format("kforge bench-task {} {}", run_dir.string(), index);
    run.config_json = ToJson(*args).dump();
    if (auto added = (*store)->AddRun(run); !added)
      return Fail(who, added.error().message, kExitInfra);
  }
  exec::StopSignals signals;
  std::vector<Task> tasks = {prepared->suite.tasks[static_cast<std::size_t>(index)]};
  auto result = RunLocal(*args, *prepared, std::move(tasks), **store, run_id, resuming,
                         static_cast<int>(n), signals, /*show_progress=*/true);
  if (!result) return Fail(who, result.error().message, kExitInfra);
  const bool done = !result->interrupted && !signals.stop().stop_requested();
  (void)(*store)->FinishRun(run_id,
                            done ? store::RunStatus::kFinished : store::RunStatus::kInterrupted);
  const nlohmann::json marker = {
      {"status", done ? "done" : "interrupted"},
      {"task", prepared->suite.tasks[static_cast<std::size_t>(index)].name},
      {"correct", result->correct}};
  if (auto w = WriteFile(dir / "exit.json", marker.dump()); !w) {
    return Fail(who, w.error().message, kExitInfra);
  }
  return 0;
}

}  // namespace

int ResumeBench(const fs::path& run_dir, const store::RunRecord& run,
                const BenchResumeOverrides& overrides) {
  auto args = ParseBenchArgs(run.config_json, run_dir.string());
  if (!args) return Fail("kforge resume", args.error().message, kExitUsage);
  if (overrides.max_tokens) args->max_tokens = *overrides.max_tokens;
  if (overrides.max_cost) args->max_cost = *overrides.max_cost;
  if (overrides.max_time_s) args->max_time_s = *overrides.max_time_s;
  return RunBenchRun(*args, run_dir, run.id, /*resuming=*/true, run.command_line, "kforge resume");
}

void AddBenchCommand(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand(
      "bench",
      "Synthesize kernels for every task of a suite at once, into one run: LLM calls concurrent "
      "up to the model's limits, compiles on the CPU pool, one timing slot per device. Live "
      "progress on a terminal, plain lines otherwise. Ctrl-C stops cleanly (twice: abandons "
      "steps in flight); `kforge resume RUN_DIR` continues. `kforge report RUN_DIR` builds its "
      "report.");
  cmd->footer(ExitCodesFooter("bench"));
  cmd->add_option("suite", args->suite, "The suite: a TOML manifest or a KernelBench JSONL file")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-t,--target", args->target, "Target vendor[-device]/model, e.g. cpu/opencl")
      ->required();
  cmd->add_option("-m,--model", args->model, "Generation model id (`kforge models` lists them)")
      ->required();
  cmd->add_option("--analysis-model", args->analysis_model,
                  "Model id of the analysis agent; default: the generation model");
  cmd->add_option("--iterations", args->iterations, "Generation steps per sample and task")
      ->default_val(3)
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--samples", args->samples, "Independent samples per task")
      ->default_val(1)
      ->check(CLI::Range(1, 256));
  cmd->add_option("--jobs", args->jobs,
                  "Tasks in flight at once (local executor); default min(tasks, 16). LLM calls "
                  "are further bounded by the model's rate and concurrency limits");
  cmd->add_option(
      "--devices", args->devices,
      "Use at most this many devices of the target (one timing slot each); default all");
  cmd->add_option("--executor", args->executor,
                  "local, or slurm (a job array, one task per element)")
      ->default_val("local")
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_option("--out", args->out, "The run directory; default kforge-runs/<run-id>");
  cmd->add_option("--max-tokens", args->max_tokens,
                  "Token budget of the bench (Slurm: split evenly over the tasks)");
  cmd->add_option("--max-cost", args->max_cost, "Money budget of the bench, US dollars");
  cmd->add_option("--max-time", args->max_time_s, "Wall-time budget of each task's loop, seconds");
  cmd->add_option("--partition", args->partition, "Slurm partition; default the cluster's");
  cmd->add_option("--gpus-per-task", args->gpus_per_task,
                  "Slurm: --gres=gpu:N per element; default 1 for GPU targets, 0 for CPU targets");
  cmd->add_option("--cpus-per-task", args->cpus_per_task, "Slurm: CPUs per element")
      ->default_val(2);
  cmd->add_option("--max-resubmits", args->max_resubmits,
                  "Slurm: resubmissions of a failed or lost element")
      ->default_val(2);
  cmd->add_option("--time-limit", args->time_limit, "Slurm: --time of each element, e.g. 02:00:00");
  cmd->add_option("--sbatch-arg", args->sbatch_args, "Slurm: extra sbatch argument (repeatable)");
  cmd->add_option("--poll-ms", args->poll_ms, "Slurm: how often the queue is read")
      ->default_val(2000);
  cmd->add_flag("--skip-target-check", args->skip_target_check,
                "Start even if this machine lacks the target's toolchain or device: to render the "
                "prompts of an inbox model and record its answers for a replay elsewhere (every "
                "evaluation here then fails)");
  cmd->add_flag("!--no-time", args->time,
                "Correctness only: do not time correct candidates (no speedups; CI)");
  AddModelSourceOptions(cmd, args.get());
  cmd->callback([args] {
    BenchArgs a = *args;
    if (!a.record.empty() && !a.replay.empty()) {
      fmt::print(stderr, "kforge bench: --record and --replay exclude each other\n");
      throw CLI::RuntimeError(kExitUsage);
    }
    a.suite = Absolute(a.suite);
    a.replay = Absolute(a.replay);
    if (!a.record.empty()) a.record = fs::absolute(a.record).lexically_normal().string();
    for (auto& m : a.models) m = Absolute(m);
    const std::string run_id = NewRunId();
    const fs::path run_dir =
        fs::absolute(a.out.empty() ? fs::path("kforge-runs") / run_id : fs::path(a.out));
    a.out = run_dir.string();
    if (fs::exists(run_dir / "run.sqlite")) {
      fmt::print(stderr,
                 "kforge bench: {} already holds a run; continue it with `kforge resume {}` or "
                 "choose another --out\n",
                 run_dir.string(), run_dir.string());
      throw CLI::RuntimeError(kExitUsage);
    }
    int code = RunBenchRun(a, run_dir, run_id, /*resuming=*/false, CommandLine(a), "kforge bench");
    if (code != 0) throw CLI::RuntimeError(code);
  });

  auto task_dir = std::make_shared<std::string>();
  auto index = std::make_shared<int>(0);
  auto* task_cmd = app.add_subcommand(
      "bench-task",
      "One element of a Slurm bench (started by the job array of `kforge bench --executor "
      "slurm`): task INDEX of the bench in RUN_DIR, into RUN_DIR/slurm/tasks/INDEX.");
  task_cmd->group("");  // internal: not listed in --help
  task_cmd->add_option("run_dir", *task_dir, "The bench's run directory")->required();
  task_cmd->add_option("index", *index, "0-based task index in the suite")->required();
  task_cmd->callback([task_dir, index] {
    int code = RunBenchTask(*task_dir, *index);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace kforge
