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
#include "kforge/app/run_config.h"
#include "kforge/app/setup.h"
#include "kforge/core/files.h"
#include "kforge/eval/task_check.h"
#include "kforge/exec/bench_progress.h"
#include "kforge/exec/local_bench.h"
#include "kforge/exec/slurm_bench.h"
#include "kforge/exec/stop_signals.h"
#include "kforge/llm/call_failure.h"
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

// What a bench's command line adds to its stored configuration; not stored.
struct BenchCommandArgs {
  app::RunConfig config;
  std::string out;  // the run directory; empty: kforge-runs/<run-id>
  // Start without this machine having the target (to render and record an inbox conversation
  // elsewhere; every evaluation then fails here).
  bool skip_target_check = false;
};

std::string CommandLine(const app::RunConfig& c) {
  const app::ModelSource& m = c.models;
  std::string line =
      fmt::format("kforge bench {} --target {} --model {} --iterations {} --samples {}", c.suite,
                  c.target, m.model, c.iterations, c.samples);
  if (c.executor != "local") line += " --executor " + c.executor;
  if (!m.replay.empty()) line += " --replay " + m.replay;
  if (!m.record.empty()) line += " --record " + m.record;
  if (c.jobs > 0) line += fmt::format(" --jobs {}", c.jobs);
  if (!c.time) line += " --no-time";
  if (m.replay_match != "exact") line += " --replay-match " + m.replay_match;
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

int FailSetup(const char* who, const app::SetupError& e) {
  return Fail(who, e.error.message, e.user_input ? kExitUsage : kExitInfra);
}

// The composition root of a bench (or of one Slurm element, whose budget is its share).
std::expected<std::unique_ptr<app::Setup>, app::SetupError> BuildRoot(const app::RunConfig& config,
                                                                      const fs::path& store_dir,
                                                                      bool probe, bool resuming,
                                                                      int budget_share) {
  app::SetupOptions options{.probe = probe,
                            .providers = true,
                            .resuming = resuming,
                            .run_dir = store_dir,
                            .eval = {},
                            .budget_share = budget_share};
  options.eval.time = config.time;
  options.eval.prepare_next = true;
  return app::Setup::Build(config, std::move(options));
}

Result<Suite> LoadBenchSuite(const app::RunConfig& config) {
  auto suite = LoadSuite(config.suite);
  if (!suite) return std::unexpected(suite.error());
  if (suite->tasks.empty())
    return InvalidArgument(fmt::format("suite {} has no tasks", config.suite));
  return suite;
}

// Runs `tasks` of the bench on this machine through `root` into its store. With `check_tasks`,
// every task runs once before the first prompt (a broken task is the user's error). The signal
// watcher's notices go through the live view while it is shown.
Result<exec::BenchResult> RunLocal(app::Setup& root, std::vector<Task> tasks,
                                   const std::string& run_id, exec::StopSignals& signals,
                                   bool check_tasks, Notices* notices = nullptr) {
  exec::LocalBenchRequest request;
  request.store = root.store();
  request.run_id = run_id;
  request.tasks = std::move(tasks);
  request.backend = &root.backend();
  request.compiler = &root.compiler();
  request.eval_options = root.eval_options();
  request.generation_provider = root.providers().generation;
  request.analysis_provider = root.providers().analysis;
  request.budget = root.budget();
  request.options = root.synthesis_options();
  request.jobs = root.config().jobs;
  request.devices = root.config().devices;
  const fs::path profiles = root.run_dir() / "profiles";
  request.complete_synthesis = [&root, profiles](const Task& task, synth::SynthesisSetup& s) {
    root.CompleteSynthesis(s, profiles / task.name);
  };
  if (check_tasks) {
    request.check_tasks = [&root](const std::vector<Task>& all) {
      return CheckTasksRun(all, root.backend(), root.eval_options());
    };
  }
  if (notices != nullptr) {
    request.show_notices = [notices](exec::BenchProgress* progress) { notices->Route(progress); };
  }
  request.out = stdout;
  request.tty = ::isatty(STDOUT_FILENO) != 0;
  return exec::RunLocalBench(std::move(request), signals);
}

int PrintSummary(store::RunStore& store, const std::string& run_id, std::size_t task_count,
                 bool interrupted, const fs::path& run_dir, const char* who) {
  auto summary = exec::SummarizeBench(store, run_id, task_count);
  if (!summary) return Fail(who, summary.error().message, kExitInfra);
  fmt::print("{}", summary->Format());
  fmt::print("Run stored in {}. Its report: kforge report {}\n", run_dir.string(),
             run_dir.string());
  if (interrupted) {
    fmt::print("The bench did not finish; continue it with: kforge resume {}\n", run_dir.string());
    return kExitSome;
  }
  return static_cast<std::size_t>(summary->solved) == task_count ? kExitAllCorrect : kExitSome;
}

fs::path SelfExe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("kforge") : p;
}

int RunBenchRun(const app::RunConfig& config, const fs::path& run_dir, const std::string& run_id,
                bool resuming, const std::string& command_line, bool skip_target_check,
                const char* who) {
  if (config.executor != "local" && config.executor != "slurm") {
    return Fail(who, fmt::format("--executor must be local or slurm, not '{}'", config.executor),
                kExitUsage);
  }
  if (config.executor == "slurm" && !config.models.record.empty()) {
    return Fail(who,
                "--record works with the local executor only (one process owns the cassette); "
                "record locally, then replay on the cluster with --replay",
                kExitUsage);
  }
  auto suite = LoadBenchSuite(config);
  if (!suite) return Fail(who, suite.error().message, kExitUsage);
  // The submitting host of a Slurm bench need not have the target's device.
  // A bench that ends before its first step (an unknown model, a broken task) leaves no run
  // folder behind, when it made the folder.
  const bool made_dir = !resuming && !fs::exists(run_dir);
  const bool probe = config.executor == "local" && !skip_target_check;
  auto root = BuildRoot(config, run_dir, probe, resuming, /*budget_share=*/1);
  if (!root) return FailSetup(who, root.error());
  store::RunStore& store = *(*root)->store();
  if (!resuming) {
    store::RunRecord run;
    run.id = run_id;
    run.kind = store::RunKind::kBench;
    run.command_line = command_line;
    run.config_json = config.ToJson();
    if (auto added = store.AddRun(run); !added) return Fail(who, added.error().message, kExitInfra);
  }
  fmt::print("{} bench of {} task(s) from {} on {} with {} ({} executor) — run {}\n",
             resuming ? "resuming" : "starting", suite->tasks.size(), config.suite, config.target,
             config.models.model, config.executor, run_dir.string());
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
  if (config.executor == "slurm") {
    exec::SlurmBenchRequest request;
    request.run_dir = run_dir;
    request.run_id = run_id;
    request.config_json = config.ToJson();
    for (const auto& t : suite->tasks) request.task_names.push_back(t.name);
    request.element_argv = {SelfExe().string(), "bench-task", run_dir.string()};
    request.options.job_name = "kforge-" + run_id;
    request.options.partition = config.slurm.partition;
    request.options.gpus_per_element = config.slurm.gpus_per_task >= 0
                                           ? config.slurm.gpus_per_task
                                           : ((*root)->backend().UsesAccelerator() ? 1 : 0);
    request.options.cpus_per_element = config.slurm.cpus_per_task;
    request.options.time_limit = config.slurm.time_limit;
    request.options.extra_sbatch_args = config.slurm.sbatch_args;
    request.options.max_resubmits = config.slurm.max_resubmits;
    request.options.poll_interval = std::chrono::milliseconds(config.slurm.poll_ms);
    auto outcome = exec::RunSlurmBench(
        request, store,
        [](std::string_view line) {
          fmt::print("{}\n", line);
          std::fflush(stdout);
        },
        [who](std::string_view line) { fmt::print(stderr, "{}: {}\n", who, line); },
        signals.stop());
    if (!outcome) {
      (void)store.FinishRun(run_id, store::RunStatus::kFailed);
      return Fail(who, outcome.error().message, kExitInfra);
    }
    (void)store.FinishRun(run_id, outcome->interrupted ? store::RunStatus::kInterrupted
                                                       : store::RunStatus::kFinished);
    return PrintSummary(store, run_id, suite->tasks.size(), outcome->interrupted, run_dir, who);
  }
  auto result = RunLocal(**root, suite->tasks, run_id, signals, /*check_tasks=*/!skip_target_check,
                         notices.get());
  if (!result) {
    // Nothing ran: a task cannot run, or a part of the bench could not start.
    (void)store.FinishRun(run_id, store::RunStatus::kFailed);
    if (made_dir) {
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
  (void)store.FinishRun(run_id, failed        ? store::RunStatus::kFailed
                                    : interrupted ? store::RunStatus::kInterrupted
                                                  : store::RunStatus::kFinished);
  const int code =
      PrintSummary(store, run_id, suite->tasks.size(), interrupted, run_dir, who);
  if (code == kExitInfra) return code;
  if (!refused.empty() && !config.models.replay.empty()) {
    fmt::print(stderr,
               "{}: the replay of {} stopped before the bench's end (task {}: {}). A cassette "
               "recorded on another machine needs --replay-match numbers; otherwise give the "
               "recording's command.\n",
               who, config.models.replay, refused.front()->task_name,
               refused.front()->stop_reason);
    return kExitUsage;
  }
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
  if (interrupted && !config.models.replay.empty() && !signals.stop().stop_requested()) {
    fmt::print(stderr,
               "{}: the replay of {} stopped before the bench's end (each stopped task's line "
               "above says where). A cassette recorded on another machine needs --replay-match "
               "numbers; otherwise give the recording's command.\n",
               who, config.models.replay);
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
  auto element = exec::ReadSlurmBenchConfig(run_dir);
  if (!element) return Fail(who, element.error().message, kExitUsage);
  auto config =
      app::RunConfig::FromJson(element->config_json, (run_dir / "slurm" / "bench.json").string());
  if (!config) return Fail(who, config.error().message, kExitUsage);
  if (config->kind != store::RunKind::kBench) {
    return Fail(who, "slurm/bench.json is not a `kforge bench` configuration", kExitUsage);
  }
  auto suite = LoadBenchSuite(*config);
  if (!suite) return Fail(who, suite.error().message, kExitInfra);
  const auto n = suite->tasks.size();
  if (index < 0 || static_cast<std::size_t>(index) >= n) {
    return Fail(who, fmt::format("task index {} is not in 0..{}", index, n - 1), kExitUsage);
  }
  const fs::path dir = exec::SlurmElementDir(run_dir, index);
  bool resuming = false;
  {
    auto existing = store::RunStore::Open(dir);
    if (!existing) return Fail(who, existing.error().message, kExitInfra);
    resuming = static_cast<bool>((*existing)->GetRun(element->run_id));
  }
  auto root = BuildRoot(*config, dir, /*probe=*/true, resuming, static_cast<int>(n));
  if (!root) return Fail(who, root.error().error.message, kExitInfra);
  store::RunStore& store = *(*root)->store();
  if (!resuming) {
    store::RunRecord run;
    run.id = element->run_id;
    run.kind = store::RunKind::kBench;
    run.command_line = fmt::format("kforge bench-task {} {}", run_dir.string(), index);
    run.config_json = config->ToJson();
    if (auto added = store.AddRun(run); !added) return Fail(who, added.error().message, kExitInfra);
  }
  exec::StopSignals signals;
  const Task task = suite->tasks[static_cast<std::size_t>(index)];
  auto result = RunLocal(**root, {task}, element->run_id, signals, /*check_tasks=*/true);
  if (!result) return Fail(who, result.error().message, kExitInfra);
  const bool done = !result->interrupted && !signals.stop().stop_requested();
  (void)store.FinishRun(element->run_id,
                        done ? store::RunStatus::kFinished : store::RunStatus::kInterrupted);
  if (auto w = exec::WriteSlurmElementMarker(dir, done, task.name, result->correct); !w) {
    return Fail(who, w.error().message, kExitInfra);
  }
  return 0;
}

}  // namespace

int ResumeBench(const app::RunConfig& config, const fs::path& run_dir, const std::string& run_id,
                const std::string& command_line) {
  return RunBenchRun(config, run_dir, run_id, /*resuming=*/true, command_line,
                     /*skip_target_check=*/false, "kforge resume");
}

void AddBenchCommand(CLI::App& app) {
  auto args = std::make_shared<BenchCommandArgs>();
  auto* cmd = app.add_subcommand(
      "bench",
      "Synthesize kernels for every task of a suite at once, into one run: LLM calls concurrent "
      "up to the model's limits, compiles on the CPU pool, one timing slot per device. Live "
      "progress on a terminal, plain lines otherwise. Ctrl-C stops cleanly (twice: abandons "
      "steps in flight); `kforge resume RUN_DIR` continues. `kforge report RUN_DIR` builds its "
      "report.");
  cmd->footer(ExitCodesFooter("bench"));
  cmd->add_option("suite", args->config.suite, "The suite: a TOML manifest or a KernelBench JSONL file")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-t,--target", args->config.target,
                  "Target vendor[-device]/model, e.g. cpu/opencl")
      ->required();
  cmd->add_option("-m,--model", args->config.models.model,
                  "Generation model id (`kforge models` lists them)")
      ->required();
  cmd->add_option("--analysis-model", args->config.models.analysis_model,
                  "Model id of the analysis agent; default: the generation model");
  cmd->add_option("--iterations", args->config.iterations, "Generation steps per sample and task")
      ->default_val(3)
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--samples", args->config.samples, "Independent samples per task")
      ->default_val(1)
      ->check(CLI::Range(1, 256));
  cmd->add_option("--jobs", args->config.jobs,
                  "Tasks in flight at once (local executor); default min(tasks, 16). LLM calls "
                  "are further bounded by the model's rate and concurrency limits");
  cmd->add_option(
      "--devices", args->config.devices,
      "Use at most this many devices of the target (one timing slot each); default all");
  cmd->add_option("--executor", args->config.executor,
                  "local, or slurm (a job array, one task per element)")
      ->default_val("local")
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_option("--out", args->out, "The run directory; default kforge-runs/<run-id>");
  cmd->add_option("--max-tokens", args->config.max_tokens,
                  "Token budget of the bench (Slurm: split evenly over the tasks)");
  cmd->add_option("--max-cost", args->config.max_cost, "Money budget of the bench, US dollars");
  cmd->add_option("--max-time", args->config.max_time_s,
                  "Wall-time budget of each task's loop, seconds");
  cmd->add_option("--partition", args->config.slurm.partition,
                  "Slurm partition; default the cluster's");
  cmd->add_option("--gpus-per-task", args->config.slurm.gpus_per_task,
                  "Slurm: --gres=gpu:N per element; default 1 for GPU targets, 0 for CPU targets");
  cmd->add_option("--cpus-per-task", args->config.slurm.cpus_per_task, "Slurm: CPUs per element")
      ->default_val(2);
  cmd->add_option("--max-resubmits", args->config.slurm.max_resubmits,
                  "Slurm: resubmissions of a failed or lost element")
      ->default_val(2);
  cmd->add_option("--time-limit", args->config.slurm.time_limit,
                  "Slurm: --time of each element, e.g. 02:00:00");
  cmd->add_option("--sbatch-arg", args->config.slurm.sbatch_args,
                  "Slurm: extra sbatch argument (repeatable)");
  cmd->add_option("--poll-ms", args->config.slurm.poll_ms, "Slurm: how often the queue is read")
      ->default_val(2000);
  cmd->add_flag("--skip-target-check", args->skip_target_check,
                "Start even if this machine lacks the target's toolchain or device: to render the "
                "prompts of an inbox model and record its answers for a replay elsewhere (every "
                "evaluation here then fails)");
  cmd->add_flag("!--no-time", args->config.time,
                "Correctness only: do not time correct candidates (no speedups; CI)");
  AddModelSourceOptions(cmd, &args->config.models);
  cmd->callback([args] {
    BenchCommandArgs a = *args;
    app::RunConfig& c = a.config;
    c.kind = store::RunKind::kBench;
    if (!c.models.record.empty() && !c.models.replay.empty()) {
      fmt::print(stderr, "kforge bench: --record and --replay exclude each other\n");
      throw CLI::RuntimeError(kExitUsage);
    }
    c.suite = Absolute(c.suite);
    AbsoluteModelSource(c.models);
    const std::string run_id = NewRunId();
    const fs::path run_dir =
        fs::absolute(a.out.empty() ? fs::path("kforge-runs") / run_id : fs::path(a.out));
    if (fs::exists(run_dir / "run.sqlite")) {
      fmt::print(stderr,
                 "kforge bench: {} already holds a run; continue it with `kforge resume {}` or "
                 "choose another --out\n",
                 run_dir.string(), run_dir.string());
      throw CLI::RuntimeError(kExitUsage);
    }
    int code = RunBenchRun(c, run_dir, run_id, /*resuming=*/false, CommandLine(c),
                           a.skip_target_check, "kforge bench");
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
