#include "eval_command.h"
#include "exit_codes.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "kforge/app/setup.h"
#include "kforge/core/files.h"
#include "kforge/eval/compile_service.h"
#include "kforge/eval/device_time_check.h"
#include "kforge/eval/evaluator.h"
#include "kforge/store/run_store.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

struct EvalArgs {
  std::string task;
  std::vector<std::string> candidates;
  std::string target;
  bool json = false;
  int trials = 5;
  std::string policy;
  std::uint64_t seed = 0;
  bool keep_work = false;
  std::string runs_dir = "kforge-runs";
  bool no_store = false;
  int timeout_s = 0;
  double memory_limit_gib = 8;
  std::vector<std::string> overrides;  // NAME=JSON
  bool no_guardrails = false;
  bool no_shortcut_trials = false;
  bool no_truth = false;
  bool allow_reference_ops = false;
  bool time = false;
  bool baselines = false;
  bool max_autotune = false;
  double time_max_seconds = 15;
  bool device_time_check = false;
};

// Exit codes, stated in --help.
constexpr int kExitCorrect = 0;
constexpr int kExitFailed = 1;       // a verdict other than correct
constexpr int kExitUsage = 2;        // bad input: named in the message
constexpr int kExitInfra = 3;        // KForge or the task failed, not the candidate

std::string NewRunId() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::random_device rd;
  return fmt::format("eval-{:04}{:02}{:02}-{:02}{:02}{:02}-{:04x}", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, rd() & 0xffff);
}

// The run of one `kforge eval` invocation in the store: one task, one candidate and one
// evaluation per candidate file.
class EvalRunRecorder {
 public:
  static Result<EvalRunRecorder> Start(const EvalArgs& args, const Task& task,
                                       const std::string& command_line) {
    EvalRunRecorder rec;
    rec.run_id_ = NewRunId();
    rec.run_dir_ = fs::path(args.runs_dir) / rec.run_id_;
    auto store = store::RunStore::Open(rec.run_dir_);
    if (!store) return std::unexpected(store.error());
    rec.store_ = std::move(*store);
    store::RunRecord run;
    run.id = rec.run_id_;
    run.kind = store::RunKind::kEval;
    run.command_line = command_line;
    run.config_json = nlohmann::json{{"target", args.target}, {"trials", args.trials}}.dump();
    if (auto added = rec.store_->AddRun(run); !added) return std::unexpected(added.error());
    auto task_hash = rec.store_->PutArtifact(task.source);
    if (!task_hash) return std::unexpected(task_hash.error());
    store::TaskRecord task_record;
    task_record.run_id = rec.run_id_;
    task_record.name = task.name;
    task_record.source_hash = *task_hash;
    task_record.metadata_json =
        nlohmann::json{{"origin", task.origin}, {"policy", PrecisionPolicyName(task.policy)}}
            .dump();
    auto added_task = rec.store_->AddTask(task_record);
    if (!added_task) return std::unexpected(added_task.error());
    rec.task_id_ = added_task->id;
    return rec;
  }

  Status Add(const std::string& source, const Verdict& verdict, const std::string& device) {
    auto cand_hash = store_->PutArtifact(source);
    if (!cand_hash) return std::unexpected(cand_hash.error());
    store::CandidateRecord cand;
    cand.run_id = run_id_;
    cand.task_id = task_id_;
    cand.pass_kind = store::PassKind::kGiven;
    cand.target = verdict.target;
    cand.source_hash = *cand_hash;
    auto added_cand = store_->AddCandidate(cand);
    if (!added_cand) return std::unexpected(added_cand.error());
    store::EvaluationRecord eval;
    eval.run_id = run_id_;
    eval.candidate_id = added_cand->id;
    eval.target = verdict.target;
    eval.device = device;
    eval.status = verdict.status;
    eval.verdict_json = verdict.ToJson();
    eval.wall_s = verdict.total_seconds;
    auto added_eval = store_->AddEvaluation(eval);
    if (!added_eval) return std::unexpected(added_eval.error());
    return Ok();
  }

  Status Finish() { return store_->FinishRun(run_id_, store::RunStatus::kFinished); }
  const fs::path& run_dir() const { return run_dir_; }

 private:
  std::string run_id_;
  std::string task_id_;
  fs::path run_dir_;
  std::unique_ptr<store::RunStore> store_;
};

int RunEval(const EvalArgs& args, const std::string& command_line) {
  auto fail = [](const Error& e, int code) {
    fmt::print(stderr, "kforge eval: {}\n", e.message);
    return code;
  };
  auto task = LoadTask(args.task);
  if (!task) return fail(task.error(), kExitUsage);
  if (auto added = AddOverrides(*task, args.overrides); !added) {
    return fail(added.error(), kExitUsage);
  }
  EvalOptions options;
  options.trials = args.trials;
  options.keep_work_dir = args.keep_work;
  options.static_guardrails = !args.no_guardrails;
  options.shortcut_trials = !args.no_shortcut_trials;
  options.truth = !args.no_truth;
  options.allow_reference_ops = args.allow_reference_ops;
  options.time = args.time || args.baselines || args.max_autotune;
  if (args.baselines || args.max_autotune) options.baselines.push_back("compile");
  if (args.max_autotune) options.baselines.push_back("compile-max-autotune");
  options.timing.max_seconds = args.time_max_seconds;
  options.memory_limit_bytes = static_cast<std::uint64_t>(args.memory_limit_gib * (1ull << 30));
  if (args.seed != 0) options.seed = args.seed;
  if (args.timeout_s > 0) {
    options.candidate_timeout = options.module_timeout = std::chrono::seconds(args.timeout_s);
  }
  if (!args.policy.empty()) {
    auto policy = ParsePrecisionPolicy(args.policy);
    if (!policy) return fail(policy.error(), kExitUsage);
    options.policy = *policy;
  }
  // The composition root: target, backend, compile service and evaluator; a target that cannot
  // run here is one line (exit 3) before any candidate is read.
  app::RunConfig config;
  config.kind = store::RunKind::kEval;
  config.target = args.target;
  config.profile = false;
  auto root = app::Setup::Build(config, app::SetupOptions{.probe = true,
                                                          .providers = false,
                                                          .resuming = false,
                                                          .run_dir = {},
                                                          .eval = options,
                                                          .budget_share = 1});
  if (!root) {
    return fail(root.error().error, root.error().user_input ? kExitUsage : kExitInfra);
  }
  const Backend* backend = &(*root)->backend();
  for (const auto& candidate : args.candidates) {
    if (!fs::exists(candidate)) {
      return fail(
          Error{ErrorCode::kNotFound, fmt::format("candidate {} does not exist", candidate)},
          kExitUsage);
    }
    if (auto text = ReadFile(candidate);
        text && text->find_first_not_of(" \t\r\n") == std::string::npos) {
      return fail(Error{ErrorCode::kInvalidArgument,
                        fmt::format("the candidate file {} is empty", candidate)},
                  kExitUsage);
    }
    if (auto kind = backend->KindOf(candidate); !kind) return fail(kind.error(), kExitUsage);
  }
  std::optional<EvalRunRecorder> recorder;
  if (!args.no_store) {
    auto started = EvalRunRecorder::Start(args, *task, command_line);
    if (!started) {
      fmt::print(stderr, "kforge eval: verdicts will not be stored: {}\n",
                 started.error().message);
    } else {
      recorder = std::move(*started);
    }
  }
  nlohmann::json all = nlohmann::json::array();
  bool all_correct = true;
  bool any_infra = false;
  Evaluator& evaluator = (*root)->evaluator();
  for (std::size_t i = 0; i < args.candidates.size(); ++i) {
    // While one candidate is evaluated, the next one's runners warm up.
    evaluator.set_prepare_next(i + 1 < args.candidates.size());
    if (i > 0 && args.candidates.size() > 1 && !args.json) fmt::print("\n");
    Verdict verdict = evaluator.Evaluate(*task, *backend, args.candidates[i]);
    // A timed correct result checked out of process before it is reported (docs/trust.md).
    if (args.device_time_check && verdict.status == EvalStatus::kCorrect && verdict.timing) {
      const DeviceTimeCheck check = CheckDeviceTime((*root)->compiler(), *task, *backend,
                                                    args.candidates[i], verdict.timing->median_s);
      verdict.device_time_check_json = check.ToJson();
      if (!args.json) fmt::print("{}\n", check.Describe());
    }
    all_correct &= verdict.status == EvalStatus::kCorrect;
    any_infra |= verdict.status == EvalStatus::kInfraError ||
                 verdict.status == EvalStatus::kReferenceError;
    if (recorder) {
      auto source = ReadFile(args.candidates[i]);
      if (auto added = recorder->Add(source ? *source : std::string(), verdict,
                                     backend->RunnerDevice());
          !added) {
        fmt::print(stderr, "kforge eval: the verdict could not be stored: {}\n",
                   added.error().message);
      }
    }
    if (args.json) {
      all.push_back(nlohmann::json::parse(verdict.ToJson()));
    } else {
      fmt::print("{}", verdict.ToText());
      std::fflush(stdout);
    }
  }
  if (recorder) {
    if (auto finished = recorder->Finish(); !finished) {
      fmt::print(stderr, "kforge eval: {}\n", finished.error().message);
    }
  }
  if (args.json) {
    fmt::print("{}\n", all.size() == 1 ? all[0].dump(2) : all.dump(2));
  } else if (recorder) {
    fmt::print("stored in {}\n", recorder->run_dir().string());
  }
  if (all_correct) return kExitCorrect;
  return any_infra ? kExitInfra : kExitFailed;
}

}  // namespace

void AddEvalCommand(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand(
      "eval",
      "Evaluate one candidate kernel against a task's PyTorch reference: compile, run in a "
      "sandboxed runner on fresh secret inputs, compare, print and store the verdict.");
  cmd->footer(ExitCodesFooter("eval"));
  cmd->add_option("task", args->task,
                  "The task: PROBLEM.py, DATASET.jsonl#N (problem_id N) or kernelbench:levelL#N")
      ->required();
  cmd->add_option("candidates", args->candidates,
                  "Candidate files, one or more (each evaluated on its own fresh inputs; the next "
                  "one's runners warm up while one runs): .cu (cuda), .cpp (cpp), .hip (hip), .py (opencl: SOURCE + "
                  "launch; triton/cute/metal: ModelNew; with a native target: a KernelBench "
                  "ModelNew submission, evaluated in compatibility mode)")
      ->required();
  cmd->add_option("-t,--target", args->target,
                  "Target vendor[-device]/model, e.g. cpu/cpp, cpu/opencl, nvidia/cuda "
                  "(`kforge targets` lists them)")
      ->required();
  cmd->add_flag("--json", args->json, "Print the verdict as JSON (docs/verdict.md)");
  cmd->add_option("--trials", args->trials, "Correctness trials on fresh inputs (>= 2)")
      ->default_val(5)
      ->check(CLI::Range(2, 100));
  cmd->add_option("--policy", args->policy,
                  "Precision policy: strict (error within 64x the fp32 reference's own against a "
                  "float64 run), tf32 (within 1e-3 of the output's magnitude), mixed (1e-2); "
                  "default: the task's, strict for fp32");
  cmd->add_option("--set", args->overrides,
                  "Override a module-level global of the task, NAME=VALUE (JSON), e.g. "
                  "--set batch_size=16 (repeatable)")
      ->allow_extra_args(false);  // one NAME=VALUE per --set: a candidate after it stays a candidate
  cmd->add_option("--seed", args->seed,
                  "Fix the secret seeds (to reproduce a verdict); default: fresh per evaluation");
  cmd->add_option("--timeout", args->timeout_s,
                  "Wall-clock limit of the candidate's process in seconds (default 120; 600 for "
                  "Python modules)");
  cmd->add_option("--memory-limit", args->memory_limit_gib,
                  "Address-space limit of CPU-target runner processes, GiB")
      ->default_val(8);
  cmd->add_flag("--no-guardrails", args->no_guardrails,
                "Skip the static guardrails (EVAL-PROTOCOL) that reject candidates before "
                "compiling; the runtime checks and the sandbox still apply");
  cmd->add_flag("--no-shortcut-trials", args->no_shortcut_trials,
                "Skip the shortcut-finding trials (scaled, negative, dominant, sorted, ties, second "
                "shape): only to measure what they cost; the verdict lists the trials it ran");
  cmd->add_flag("--no-truth", args->no_truth,
                "Judge by the tolerance rule instead of the float64 truth: only to measure what "
                "the truth costs; the verdict's precision says which rule applied");
  cmd->add_flag("--allow-reference-ops", args->allow_reference_ops,
                "Let candidates call PyTorch's compute ops (torch.*, F.*, nn submodules) in the "
                "forward path instead of rejecting them");
  cmd->add_flag("--time", args->time,
                "Time a correct candidate's call after the trials, and the reference's PyTorch "
                "eager forward on the same device in the same run (median, noise, speedup; "
                "runner/PROTOCOL.md, Timing)");
  cmd->add_flag("--baselines", args->baselines,
                "--time, plus the torch.compile baseline (default mode) timed by the same code; "
                "cached per task, device and library versions (the first evaluation of a task "
                "compiles); speedups against eager, compile and the faster of the two; with a "
                "calibration (`kforge calibrate`) the physics floor and speed-of-light fraction");
  cmd->add_flag("--max-autotune", args->max_autotune,
                "--baselines, plus torch.compile mode max-autotune (minutes per task the first "
                "time)");
  cmd->add_option("--time-max-seconds", args->time_max_seconds,
                  "With --time: stop sampling after this many seconds whatever the noise")
      ->default_val(15)
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--device-time-check", args->device_time_check,
                "With --time: time a correct candidate once more under Nsight Compute, in a fresh "
                "harness process on fresh inputs, and store whether it agrees (docs/trust.md)");
  cmd->add_flag("--keep-work", args->keep_work, "Keep the evaluation's work folder for debugging");
  cmd->add_option("--runs-dir", args->runs_dir, "Where runs are stored")->default_val("kforge-runs");
  cmd->add_flag("--no-store", args->no_store, "Do not store the verdict");
  cmd->callback([args, &app] {
    std::string command_line = "kforge eval " + args->task;
    for (const auto& c : args->candidates) command_line += " " + c;
    command_line += " --target " + args->target;
    int code = RunEval(*args, command_line);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace kforge
