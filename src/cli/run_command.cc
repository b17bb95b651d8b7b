#include "run_command.h"
#include "exit_codes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench_command.h"
#include "kforge/app/run_config.h"
#include "kforge/app/setup.h"
#include "kforge/app/task_spec.h"
#include "kforge/core/files.h"
#include "kforge/llm/budget.h"
#include "exit_codes.h"
#include "kforge/llm/call_failure.h"
#include "kforge/store/run_store.h"
#include "kforge/synth/synthesizer.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"
#include "run_support.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// Exit codes (exit_codes.h), stated in --help.
constexpr int kExitCorrect = kExitOk;              // a correct kernel was found
constexpr int kExitNone = kExitNotAll;             // the run ended without a correct kernel
constexpr int kExitUsage = kExitBadInput;          // bad input: named in the message
constexpr int kExitInfra = kExitKforgeFailed;      // KForge, the store or the toolchain failed
constexpr int kExitPaused = kExitProviderPause;    // the provider failed: resumable

// The `kforge eval` command that checks `kernel` on its own.
std::string EvalCommandFor(const Task& task, const std::string& task_spec, const fs::path& kernel,
                           const std::string& target) {
  std::string spec = task_spec;
  if (task.level > 0 && task.problem_id > 0 && task_spec.find(".toml#") != std::string::npos) {
    spec = fmt::format("kernelbench:level{}#{}", task.level, task.problem_id);
  }
  std::string command = fmt::format("kforge eval {} {} --target {}", spec, kernel.string(), target);
  if (spec != task_spec || task_spec.find(".toml#") == std::string::npos) {
    for (const auto& o : task.overrides)
      command += fmt::format(" --set {}={}", o.name, o.value_json);
  }
  return command;
}

void PrintProgress(const synth::ProgressEvent& e) {
  fmt::print("sample {} · iteration {} · {:<12} · {:<16} · best: {} · {} tokens · ${:.4f}{}\n",
             e.sample, e.iteration + 1, e.pass, e.status, e.best, e.tokens, e.cost_usd,
             e.reused ? " · (answer from the store)" : "");
  std::fflush(stdout);
}

// Runs (or resumes) the synthesis of `config` in `run_dir` as run `run_id`.
int RunSynthesis(const app::RunConfig& config, const fs::path& run_dir, const std::string& run_id,
                 bool resuming, const std::string& command_line, const char* who) {
  auto fail = [who](const Error& e, int code) {
    fmt::print(stderr, "{}: {}\n", who, e.message);
    return code;
  };
  auto task = app::LoadTaskSpec(config.task);
  if (!task) return fail(task.error(), kExitUsage);
  // Every correct candidate is timed (the loop keeps the fastest), and the next evaluation's
  // runners warm while one runs.
  app::SetupOptions options{.probe = true,
                            .providers = true,
                            .resuming = resuming,
                            .run_dir = run_dir,
                            .eval = {},
                            .budget_share = 1};
  options.eval.time = true;
  options.eval.prepare_next = true;
  auto setup = app::Setup::Build(config, std::move(options));
  if (!setup) return fail(setup.error().error, setup.error().user_input ? kExitUsage : kExitInfra);
  app::Setup& root = **setup;
  if (!root.providers().recording.empty()) {
    fmt::print("recording LLM calls to {}\n", root.providers().recording);
  }
  store::RunStore& store = *root.store();
  if (!resuming) {
    store::RunRecord run;
    run.id = run_id;
    run.kind = store::RunKind::kRun;
    run.command_line = command_line;
    run.config_json = config.ToJson();
    if (auto added = store.AddRun(run); !added) return fail(added.error(), kExitInfra);
  }
  fmt::print("{} {} on {} with {}{} — run {}\n", resuming ? "resuming" : "synthesizing", task->name,
             config.target, config.models.model,
             config.models.analysis_model.empty()
                 ? ""
                 : fmt::format(" (analysis: {})", config.models.analysis_model),
             run_dir.string());

  synth::SynthesisSetup setup_of_task = root.SynthesisFor(*task, run_id, run_dir / "profiles");
  setup_of_task.on_progress = PrintProgress;
  const std::shared_ptr<llm::Budget> budget = root.budget();
  auto result = synth::Synthesizer(std::move(setup_of_task)).Run();
  if (!result) {
    (void)store.FinishRun(run_id, store::RunStatus::kFailed);
    // A broken task (the check before the first prompt) is the user's to fix; a new run did
    // nothing, so it leaves no folder behind.
    const bool usage = result.error().code == ErrorCode::kInvalidArgument;
    if (usage && !resuming) {
      std::error_code ec;
      fs::remove_all(run_dir, ec);
    }
    return fail(result.error(), usage ? kExitUsage : kExitInfra);
  }
  // A permanent LLM failure ends the run (failed); any other stop leaves it resumable.
  const bool ended_by_model = result->call_failure == llm::CallFailureKind::kPermanent;
  const store::RunStatus status = ended_by_model        ? store::RunStatus::kFailed
                                  : result->interrupted ? store::RunStatus::kInterrupted
                                                        : store::RunStatus::kFinished;
  if (auto finished = store.FinishRun(run_id, status); !finished) {
    fmt::print(stderr, "{}: {}\n", who, finished.error().message);
  }

  const llm::BudgetSpent spent = budget->Spent();
  fmt::print("\n{} step(s); {}; {} tokens, ${:.4f}\n", result->steps, result->stop_reason,
             spent.input_tokens + spent.output_tokens, spent.usd);
  if (ended_by_model && !config.models.replay.empty()) {
    // A replay stops only where its prompts left the recording: the input is to fix (the
    // cassette, the command, or the match mode), not a result.
    fmt::print(stderr,
               "{}: the replay of {} stopped before the run's end ({}). A cassette recorded on "
               "another machine needs --replay-match numbers; otherwise give the recording's "
               "command (same task, target, iterations, samples, --no-profile).\n",
               who, config.models.replay, result->call_error);
    fmt::print("The run stopped (stored as failed). Fix the command, then continue it: "
               "kforge resume {}\n",
               run_dir.string());
    return kExitUsage;
  }
  if (ended_by_model) {
    fmt::print(stderr, "{}: the model cannot answer, and waiting will not change that: {}\n", who,
               result->call_error);
    fmt::print("The run stopped (stored as failed). Fix what the message says, then continue it: "
               "kforge resume {}\n",
               run_dir.string());
    return kExitUsage;
  }
  if (result->call_failure == llm::CallFailureKind::kTransient) {
    fmt::print(stderr, "{}: the LLM provider failed after its retries: {}\n", who,
               result->call_error);
    if (!result->best_path.empty()) {
      fmt::print("Best kernel so far: {} (correct; sample {}, iteration {})\n",
                 fs::absolute(result->best_path).string(), result->best->sample,
                 result->best->iteration + 1);
    }
    fmt::print("The run is paused, not finished (stored as interrupted). When the provider answers "
               "again, continue it: kforge resume {}\n",
               run_dir.string());
    return kExitPaused;
  }
  if (result->interrupted && result->awaiting_answer) {
    // A pause, not a failure: the prompt waits for the user's answer (the stop reason says
    // which file to write).
    if (!result->best_path.empty()) {
      fmt::print("Best kernel so far: {} (correct)\n",
                 fs::absolute(result->best_path).string());
    }
    fmt::print("Paused: write the answer where the line above says, then continue with: "
               "kforge resume {}\n",
               run_dir.string());
    return kExitAnswerPause;
  }
  if (result->interrupted && !config.models.replay.empty()) {
    // A replay stops only where its prompts left the recording: the input is to fix (the
    // cassette, the command, or the match mode), not a result.
    fmt::print(stderr,
               "{}: the replay of {} stopped before the run's end ({}). A cassette recorded on "
               "another machine needs --replay-match numbers; otherwise give the recording's "
               "command (same task, target, iterations, samples, --no-profile).\n",
               who, config.models.replay, result->stop_reason);
    return kExitUsage;
  }
  if (!result->task_error.empty()) {
    fmt::print(stderr, "{}: the task's reference failed, not the candidate: fix the task ({})\n",
               who, result->task_error);
    return kExitUsage;
  }
  if (result->best_path.empty()) {
    fmt::print(
        "No correct kernel in this run. Its candidates and verdicts are under {}/candidates "
        "and in {}/run.sqlite.\n",
        run_dir.string(), run_dir.string());
    fmt::print(
        "To continue it (after an inbox answer, or with --max-tokens/--max-cost/--max-time "
        "raised): kforge resume {}\n",
        run_dir.string());
    return kExitNone;
  }
  const fs::path best = fs::absolute(result->best_path);
  fmt::print("Best kernel: {} (correct; sample {}, iteration {})\n", best.string(),
             result->best->sample, result->best->iteration + 1);
  fmt::print("Check it:    {}\n", EvalCommandFor(*task, config.task, best, config.target));
  const CandidateFormat& format = root.backend().format();
  if (format.kind == CandidateKind::kNative) {
    fmt::print("Use it:      it defines {}; the C ABI is {}\n", format.requirement,
               (KforgeHome() / "runner/kforge_runner/abi/kforge_kernel.h").string());
  } else {
    fmt::print("Use it:      it defines {}\n", format.requirement);
  }
  fmt::print("Run stored in {} (prompts, answers, candidates, verdicts, costs).\n",
             run_dir.string());
  return kExitCorrect;
}

std::string CommandLine(const app::RunConfig& c) {
  const app::ModelSource& m = c.models;
  std::string line = fmt::format("kforge run {} --target {} --model {}", c.task, c.target, m.model);
  if (!m.analysis_model.empty()) line += fmt::format(" --analysis-model {}", m.analysis_model);
  line += fmt::format(" --iterations {} --samples {}", c.iterations, c.samples);
  if (!c.reference_impl.empty()) {
    line += fmt::format(" --reference-impl {} --reference-target {}", c.reference_impl,
                        c.reference_target);
  }
  if (c.max_tokens > 0) line += fmt::format(" --max-tokens {}", c.max_tokens);
  if (c.max_cost > 0) line += fmt::format(" --max-cost {}", c.max_cost);
  if (c.max_time_s > 0) line += fmt::format(" --max-time {}", c.max_time_s);
  if (!m.record.empty()) line += fmt::format(" --record {}", m.record);
  if (!m.replay.empty()) line += fmt::format(" --replay {}", m.replay);
  if (m.replay_match != "exact") line += fmt::format(" --replay-match {}", m.replay_match);
  if (m.inbox_wait) line += " --inbox-wait";
  return line;
}

int RunNew(app::RunConfig config, fs::path* run_dir_out = nullptr,
           std::string* run_id_out = nullptr) {
  if (!config.models.record.empty() && !config.models.replay.empty()) {
    fmt::print(stderr, "kforge run: --record and --replay exclude each other\n");
    return kExitUsage;
  }
  config.kind = store::RunKind::kRun;
  config.task = app::AbsoluteTaskSpec(config.task);
  config.reference_impl = Absolute(config.reference_impl);
  AbsoluteModelSource(config.models);
  const std::string run_id = NewRunId();
  const fs::path run_dir = fs::absolute(fs::path(config.runs_dir) / run_id);
  if (run_dir_out != nullptr) *run_dir_out = run_dir;
  if (run_id_out != nullptr) *run_id_out = run_id;
  return RunSynthesis(config, run_dir, run_id, /*resuming=*/false, CommandLine(config),
                      "kforge run");
}

// Budgets a resume may raise (or set) over the stored configuration; unset = as stored.
struct ResumeOverrides {
  std::optional<std::int64_t> max_tokens;
  std::optional<double> max_cost;
  std::optional<int> max_time_s;
};

int Resume(const std::string& run_dir_arg, const ResumeOverrides& overrides) {
  const fs::path run_dir = fs::absolute(run_dir_arg);
  if (!fs::exists(run_dir / "run.sqlite")) {
    fmt::print(stderr, "kforge resume: {} is not a run directory (no run.sqlite in it)\n",
               run_dir.string());
    return kExitUsage;
  }
  std::optional<store::RunRecord> run;
  {
    auto store = store::RunStore::Open(run_dir);
    if (!store) {
      fmt::print(stderr, "kforge resume: {}\n", store.error().message);
      return kExitInfra;
    }
    auto runs = (*store)->ListRuns();
    if (!runs) {
      fmt::print(stderr, "kforge resume: {}\n", runs.error().message);
      return kExitInfra;
    }
    for (const auto& r : *runs) {
      if (r.kind == store::RunKind::kRun || r.kind == store::RunKind::kBench ||
          r.kind == store::RunKind::kE2e) {
        run = r;
      }
    }
  }
  if (!run) {
    fmt::print(stderr, "kforge resume: {} holds no `kforge run` or `kforge bench` run\n",
               run_dir.string());
    return kExitUsage;
  }
  if (run->kind == store::RunKind::kE2e) {
    fmt::print(stderr,
               "kforge resume: {} is a `kforge e2e` run, which cannot be resumed yet: run "
               "the same kforge e2e command again (answered inbox prompts are not asked "
               "again)\n",
               run_dir.string());
    return kExitUsage;
  }
  // Every resume reads the one run configuration (app/run_config.h, docs/store.md).
  auto config = app::RunConfig::FromJson(run->config_json, run_dir.string());
  if (!config) {
    fmt::print(stderr, "kforge resume: {}\n", config.error().message);
    return kExitUsage;
  }
  if (overrides.max_tokens) config->max_tokens = *overrides.max_tokens;
  if (overrides.max_cost) config->max_cost = *overrides.max_cost;
  if (overrides.max_time_s) config->max_time_s = *overrides.max_time_s;
  if (config->kind == store::RunKind::kBench) {
    return ResumeBench(*config, run_dir, run->id, run->command_line);
  }
  return RunSynthesis(*config, run_dir, run->id, /*resuming=*/true, run->command_line,
                      "kforge resume");
}

}  // namespace

int RunReplayed(const ReplayRunRequest& request, fs::path* run_dir, std::string* run_id) {
  app::RunConfig config;
  config.task = request.task;
  config.target = request.target;
  config.models.model = request.model;
  config.models.replay = request.cassette;
  config.models.replay_match = "numbers";
  config.iterations = request.iterations;
  config.profile = request.profile;
  config.runs_dir = request.runs_dir;
  return RunNew(config, run_dir, run_id);
}

void AddRunCommand(CLI::App& app) {
  auto config = std::make_shared<app::RunConfig>();
  auto* cmd = app.add_subcommand(
      "run",
      "Synthesize a kernel for a task: the generation agent writes candidates, the harness checks "
      "them (guardrails, compile, correctness on fresh inputs), failures go back as feedback, and "
      "optimization passes follow the analysis agent's advice. Everything is stored in the run "
      "directory; `kforge resume RUN_DIR` continues a run that was stopped.");
  cmd->footer(ExitCodesFooter("run"));
  cmd->add_option("task", config->task,
                  "The task: SUITE.toml#ID, PROBLEM.py, DATASET.jsonl#N or kernelbench:levelL#N")
      ->required();
  cmd->add_option("-t,--target", config->target, "Target vendor[-device]/model, e.g. cpu/cpp")
      ->required();
  cmd->add_option("-m,--model", config->models.model,
                  "Generation model id (`kforge models` lists them)")
      ->required();
  cmd->add_option("--analysis-model", config->models.analysis_model,
                  "Model id of the analysis agent; default: the generation model");
  cmd->add_option("--iterations", config->iterations,
                  "Generation steps per sample (functional, then optimization); 1 = single-shot")
      ->default_val(5)
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("!--no-profile", config->profile,
                "No profile pass before each analysis (default: one where the target has a "
                "profiler with kernel-level output: ncu on CUDA when installed, else the torch "
                "profiler on GPUs, OpenCL events on OpenCL)");
  cmd->add_option("--samples", config->samples, "Independent samples, run concurrently; best kept")
      ->default_val(1)
      ->check(CLI::Range(1, 256));
  cmd->add_option("--reference-impl", config->reference_impl,
                  "A working implementation for another target, to translate from")
      ->check(CLI::ExistingFile);
  cmd->add_option("--reference-target", config->reference_target,
                  "The target --reference-impl was written for, e.g. nvidia/cuda");
  cmd->add_option("--max-tokens", config->max_tokens, "Token budget of the run (input + output)");
  cmd->add_option("--max-cost", config->max_cost, "Money budget of the run, US dollars");
  cmd->add_option("--max-time", config->max_time_s, "Wall-time budget of the run, seconds");
  cmd->add_option("--runs-dir", config->runs_dir, "Where runs are stored")
      ->default_val("kforge-runs");
  AddModelSourceOptions(cmd, &config->models);
  cmd->callback([config] {
    int code = RunNew(*config);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

void AddResumeCommand(CLI::App& app) {
  auto run_dir = std::make_shared<std::string>();
  auto overrides = std::make_shared<ResumeOverrides>();
  auto* cmd = app.add_subcommand(
      "resume",
      "Continue a `kforge run` or `kforge bench` that was stopped (killed, interrupted, out of "
      "budget) with its "
      "stored configuration: finished LLM calls are answered from the run's store and finished "
      "evaluations are reused, so nothing is paid for or run twice.");
  cmd->footer(ExitCodesFooter("resume"));
  cmd->add_option("run_dir", *run_dir, "The run directory, e.g. kforge-runs/run-20250101-...")
      ->required();
  cmd->add_option("--max-tokens", overrides->max_tokens,
                  "Token budget of the whole run (what it already spent counts); default: as "
                  "stored");
  cmd->add_option("--max-cost", overrides->max_cost,
                  "Money budget of the whole run, US dollars; default: as stored");
  cmd->add_option("--max-time", overrides->max_time_s,
                  "Wall-time budget of this resumed part, seconds; default: as stored");
  cmd->callback([run_dir, overrides] {
    int code = Resume(*run_dir, *overrides);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace kforge
