#include "run_command.h"

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
#include "kforge/core/files.h"
#include "kforge/eval/compile_service.h"
#include "kforge/eval/evaluator.h"
#include "kforge/llm/budget.h"
#include "kforge/llm/cassette.h"
#include "kforge/llm/provider_factory.h"
#include "kforge/llm/registry.h"
#include "kforge/profile/profiler.h"
#include "kforge/store/run_store.h"
#include "kforge/synth/synthesizer.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"
#include "run_support.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// Exit codes, stated in --help.
constexpr int kExitCorrect = 0;  // a correct kernel was found
constexpr int kExitNone = 1;     // the run ended without a correct kernel
constexpr int kExitUsage = 2;    // bad input: named in the message
constexpr int kExitInfra = 3;    // KForge, the store or the toolchain failed

constexpr int kConfigVersion = 1;

// The configuration of a run: the command line resolved (paths made absolute), stored as the run
// row's config_json so that `kforge resume` can run it again.
struct RunArgs {
  bool no_profile = false;  // no profile pass before each analysis
  std::string task;
  std::string target;
  std::string model;
  std::string analysis_model;  // empty: the generation model
  int iterations = 5;
  int samples = 1;
  std::string reference_impl;
  std::string reference_target;
  std::int64_t max_tokens = 0;  // 0: no limit
  double max_cost = 0;          // 0: no limit
  int max_time_s = 0;           // 0: no limit
  std::vector<std::string> models;
  std::string runs_dir = "kforge-runs";
  std::string record;
  std::string record_note;
  std::string replay;
  std::string replay_match = "exact";  // exact | numbers (llm::ReplayMatch)
  bool inbox_wait = false;
};

std::string ToJson(const RunArgs& a) {
  nlohmann::json j{{"config_version", kConfigVersion},
                   {"task", a.task},
                   {"target", a.target},
                   {"iterations", a.iterations},
                   {"no_profile", a.no_profile},
                   {"samples", a.samples},
                   {"reference_impl", a.reference_impl},
                   {"reference_target", a.reference_target},
                   {"max_tokens", a.max_tokens},
                   {"max_cost", a.max_cost},
                   {"max_time_s", a.max_time_s},
                   {"runs_dir", a.runs_dir}};
  WriteModelSource(j, a);
  return j.dump();
}

Result<RunArgs> ParseRunArgs(const std::string& json_text, const std::string& where) {
  auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (!j.is_object() || j.value("config_version", 0) != kConfigVersion) {
    return ParseError(fmt::format(
        "{}: the stored configuration is not a `kforge run` configuration of version {}", where,
        kConfigVersion));
  }
  try {
    RunArgs a;
    a.task = j.at("task").get<std::string>();
    a.target = j.at("target").get<std::string>();
    a.iterations = j.value("iterations", 5);
    a.no_profile = j.value("no_profile", false);
    a.samples = j.value("samples", 1);
    a.reference_impl = j.value("reference_impl", "");
    a.reference_target = j.value("reference_target", "");
    a.max_tokens = j.value("max_tokens", std::int64_t{0});
    a.max_cost = j.value("max_cost", 0.0);
    a.max_time_s = j.value("max_time_s", 0);
    a.runs_dir = j.value("runs_dir", "kforge-runs");
    ReadModelSource(j, a);
    return a;
  } catch (const nlohmann::json::exception& e) {
    return ParseError(fmt::format("{}: stored configuration: {}", where, e.what()));
  }
}

// TASK is SUITE.toml#ID (a task of a suite, with its overrides) or any LoadTask() form.
Result<Task> LoadRunTask(const std::string& spec) {
  const auto hash = spec.rfind('#');
  if (hash != std::string::npos && spec.substr(0, hash).ends_with(".toml")) {
    const std::string suite_path = spec.substr(0, hash);
    const std::string id = spec.substr(hash + 1);
    auto suite = LoadSuite(suite_path);
    if (!suite) return std::unexpected(suite.error());
    std::vector<std::string> ids;
    for (const Task& t : suite->tasks) {
      if (t.id == id || t.name == id) return t;
      ids.push_back(t.id);
    }
    return NotFound(fmt::format("suite {} has no task '{}'; its tasks: {}", suite_path, id,
                                fmt::join(ids, ", ")));
  }
  return LoadTask(spec);
}

std::string AbsoluteTaskSpec(const std::string& spec) {
  const auto hash = spec.rfind('#');
  if (hash != std::string::npos && fs::exists(spec.substr(0, hash))) {
    return Absolute(spec.substr(0, hash)) + spec.substr(hash);
  }
  return Absolute(spec);
}

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

// Runs (or resumes) the synthesis of `args` in `run_dir` as run `run_id`.
int RunSynthesis(const RunArgs& args, const fs::path& run_dir, const std::string& run_id,
                 bool resuming, const std::string& command_line, const char* who) {
  auto fail = [who](const Error& e, int code) {
    fmt::print(stderr, "{}: {}\n", who, e.message);
    return code;
  };
  auto target = Target::Parse(args.target);
  if (!target) return fail(target.error(), kExitUsage);
  auto task = LoadRunTask(args.task);
  if (!task) return fail(task.error(), kExitUsage);
  if (args.iterations < 1 || args.samples < 1) {
    return fail(Error{ErrorCode::kInvalidArgument, "--iterations and --samples must be at least 1"},
                kExitUsage);
  }
  std::optional<TranslationSource> translate_from;
  if (!args.reference_impl.empty()) {
    if (args.reference_target.empty()) {
      return fail(Error{ErrorCode::kInvalidArgument,
                        "--reference-impl needs --reference-target, the target it was written "
                        "for (e.g. --reference-target nvidia/cuda)"},
                  kExitUsage);
    }
    auto ref_target = Target::Parse(args.reference_target);
    if (!ref_target) return fail(ref_target.error(), kExitUsage);
    auto source = ReadFile(args.reference_impl);
    if (!source) return fail(source.error(), kExitUsage);
    translate_from = TranslationSource{.target = *ref_target,
                                       .file_name = CandidateFormatOf(ref_target->model).file_name,
                                       .source = *source};
  }
  auto backend = NewBackend(*target);
  if (Availability a = backend->Probe(); !a.usable()) {
    std::string why = fmt::format("target {} cannot run here:", args.target);
    for (const auto& m : a.missing) why += fmt::format("\n  - {}", m);
    return fail(Error{ErrorCode::kUnavailable, why}, kExitInfra);
  }

  llm::BudgetLimits limits;
  if (args.max_tokens > 0) limits.max_tokens = args.max_tokens;
  if (args.max_cost > 0) limits.max_usd = args.max_cost;
  auto budget = std::make_shared<llm::Budget>(limits);
  auto providers = MakeProviders(ProviderArgsOf(args), resuming, budget);
  if (!providers) return fail(providers.error(), kExitUsage);

  auto store = store::RunStore::Open(run_dir);
  if (!store) return fail(store.error(), kExitInfra);
  if (!resuming) {
    store::RunRecord run;
    run.id = run_id;
    run.kind = store::RunKind::kRun;
    run.command_line = command_line;
    run.config_json = ToJson(args);
    if (auto added = (*store)->AddRun(run); !added) return fail(added.error(), kExitInfra);
  }
  fmt::print("{} {} on {} with {}{} — run {}\n", resuming ? "resuming" : "synthesizing", task->name,
             args.target, args.model,
             args.analysis_model.empty() ? "" : fmt::format(" (analysis: {})", args.analysis_model),
             run_dir.string());

  CompileService compiler;
  // Every correct candidate is timed (the loop keeps the fastest), and the next evaluation's
  // runners warm while one runs.
  EvalOptions eval_options;
  eval_options.time = true;
  eval_options.prepare_next = true;
  Evaluator evaluator(compiler, eval_options);
  synth::SynthesisSetup setup;
  setup.store = store->get();
  setup.run_id = run_id;
  setup.task = *task;
  setup.backend = backend.get();
  setup.evaluator = &evaluator;
  setup.generation_provider = providers->generation;
  setup.analysis_provider = providers->analysis;
  setup.budget = budget;
  setup.translate_from = translate_from;
  setup.options.iterations = args.iterations;
  setup.options.samples = args.samples;
  if (args.max_time_s > 0) setup.options.max_wall_time = std::chrono::seconds(args.max_time_s);
  setup.on_progress = PrintProgress;
  if (!args.no_profile) {
    setup.profile_summary = profile::MakeSummaryProfiler(compiler, eval_options, setup.task,
                                                         *backend, run_dir / "profiles");
  }

  auto result = synth::Synthesizer(std::move(setup)).Run();
  if (!result) {
    (void)(*store)->FinishRun(run_id, store::RunStatus::kFailed);
    return fail(result.error(), kExitInfra);
  }
  const store::RunStatus status =
      result->interrupted ? store::RunStatus::kInterrupted : store::RunStatus::kFinished;
  if (auto finished = (*store)->FinishRun(run_id, status); !finished) {
    fmt::print(stderr, "{}: {}\n", who, finished.error().message);
  }

  const llm::BudgetSpent spent = budget->Spent();
  fmt::print("\n{} step(s); {}; {} tokens, ${:.4f}\n", result->steps, result->stop_reason,
             spent.input_tokens + spent.output_tokens, spent.usd);
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
  fmt::print("Check it:    {}\n", EvalCommandFor(*task, args.task, best, args.target));
  const CandidateFormat& format = backend->format();
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

std::string CommandLine(const RunArgs& a) {
  std::string line = fmt::format("kforge run {} --target {} --model {}", a.task, a.target, a.model);
  if (!a.analysis_model.empty()) line += fmt::format(" --analysis-model {}", a.analysis_model);
  line += fmt::format(" --iterations {} --samples {}", a.iterations, a.samples);
  if (!a.reference_impl.empty()) {
    line += fmt::format(" --reference-impl {} --reference-target {}", a.reference_impl,
                        a.reference_target);
  }
  if (a.max_tokens > 0) line += fmt::format(" --max-tokens {}", a.max_tokens);
  if (a.max_cost > 0) line += fmt::format(" --max-cost {}", a.max_cost);
  if (a.max_time_s > 0) line += fmt::format(" --max-time {}", a.max_time_s);
  if (!a.record.empty()) line += fmt::format(" --record {}", a.record);
  if (!a.replay.empty()) line += fmt::format(" --replay {}", a.replay);
  if (a.replay_match != "exact") line += fmt::format(" --replay-match {}", a.replay_match);
  if (a.inbox_wait) line += " --inbox-wait";
  return line;
}

int RunNew(RunArgs args, fs::path* run_dir_out = nullptr, std::string* run_id_out = nullptr) {
  if (!args.record.empty() && !args.replay.empty()) {
    fmt::print(stderr, "kforge run: --record and --replay exclude each other\n");
    return kExitUsage;
  }
  args.task = AbsoluteTaskSpec(args.task);
  args.reference_impl = Absolute(args.reference_impl);
  args.replay = Absolute(args.replay);
  if (!args.record.empty()) args.record = fs::absolute(args.record).lexically_normal().string();
  for (auto& m : args.models) m = Absolute(m);
  const std::string run_id = NewRunId();
  const fs::path run_dir = fs::absolute(fs::path(args.runs_dir) / run_id);
  if (run_dir_out != nullptr) *run_dir_out = run_dir;
  if (run_id_out != nullptr) *run_id_out = run_id;
  return RunSynthesis(args, run_dir, run_id, /*resuming=*/false, CommandLine(args), "kforge run");
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
      if (r.kind == store::RunKind::kRun) run = r;
      if (r.kind == store::RunKind::kE2e) {
        fmt::print(stderr,
                   "kforge resume: {} is a `kforge e2e` run, which cannot be resumed yet: run "
                   "the same kforge e2e command again (answered inbox prompts are not asked "
                   "again)\n",
                   run_dir.string());
        return kExitUsage;
      }
      if (r.kind == store::RunKind::kBench) {
        store->reset();
        return ResumeBench(
            run_dir, r,
            BenchResumeOverrides{overrides.max_tokens, overrides.max_cost, overrides.max_time_s});
      }
    }
  }
  if (!run) {
    fmt::print(stderr, "kforge resume: {} holds no `kforge run` run\n", run_dir.string());
    return kExitUsage;
  }
  auto args = ParseRunArgs(run->config_json, run_dir.string());
  if (!args) {
    fmt::print(stderr, "kforge resume: {}\n", args.error().message);
    return kExitUsage;
  }
  if (overrides.max_tokens) args->max_tokens = *overrides.max_tokens;
  if (overrides.max_cost) args->max_cost = *overrides.max_cost;
  if (overrides.max_time_s) args->max_time_s = *overrides.max_time_s;
  return RunSynthesis(*args, run_dir, run->id, /*resuming=*/true, run->command_line,
                      "kforge resume");
}

}  // namespace

int RunReplayed(const ReplayRunRequest& request, fs::path* run_dir, std::string* run_id) {
  RunArgs args;
  args.task = request.task;
  args.target = request.target;
  args.model = request.model;
  args.replay = request.cassette;
  args.replay_match = "numbers";
  args.iterations = request.iterations;
  args.no_profile = !request.profile;
  args.runs_dir = request.runs_dir;
  return RunNew(args, run_dir, run_id);
}

void AddRunCommand(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand(
      "run",
      "Synthesize a kernel for a task: the generation agent writes candidates, the harness checks "
      "them (guardrails, compile, correctness on fresh inputs), failures go back as feedback, and "
      "optimization passes follow the analysis agent's advice. Everything is stored in the run "
      "directory; `kforge resume RUN_DIR` continues a run that was stopped.\n"
      "Exit code: 0 a correct kernel, 1 none, 2 bad input, 3 KForge or the toolchain failed.");
  cmd->add_option("task", args->task,
                  "The task: SUITE.toml#ID, PROBLEM.py, DATASET.jsonl#N or kernelbench:levelL#N")
      ->required();
  cmd->add_option("-t,--target", args->target, "Target vendor[-device]/model, e.g. cpu/cpp")
      ->required();
  cmd->add_option("-m,--model", args->model, "Generation model id (`kforge models` lists them)")
      ->required();
  cmd->add_option("--analysis-model", args->analysis_model,
                  "Model id of the analysis agent; default: the generation model");
  cmd->add_option("--iterations", args->iterations,
                  "Generation steps per sample (functional, then optimization); 1 = single-shot")
      ->default_val(5)
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--no-profile", args->no_profile,
                "No profile pass before each analysis (default: one where the target has a "
                "profiler with kernel-level output: ncu on CUDA when installed, else the torch "
                "profiler on GPUs, OpenCL events on OpenCL)");
  cmd->add_option("--samples", args->samples, "Independent samples, run concurrently; best kept")
      ->default_val(1)
      ->check(CLI::Range(1, 256));
  cmd->add_option("--reference-impl", args->reference_impl,
                  "A working implementation for another target, to translate from")
      ->check(CLI::ExistingFile);
  cmd->add_option("--reference-target", args->reference_target,
                  "The target --reference-impl was written for, e.g. nvidia/cuda");
  cmd->add_option("--max-tokens", args->max_tokens, "Token budget of the run (input + output)");
  cmd->add_option("--max-cost", args->max_cost, "Money budget of the run, US dollars");
  cmd->add_option("--max-time", args->max_time_s, "Wall-time budget of the run, seconds");
  cmd->add_option("--runs-dir", args->runs_dir, "Where runs are stored")
      ->default_val("kforge-runs");
  AddModelSourceOptions(cmd, args.get());
  cmd->callback([args] {
    int code = RunNew(*args);
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
