#include "kforge/eval/evaluator.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>

#include "baseline_cache.h"
#include "file_modes.h"
#include "kforge/core/files.h"
#include "kforge/core/sandbox.h"
#include "kforge/eval/accuracy.h"
#include "kforge/eval/calibration.h"
#include "kforge/eval/guardrails.h"
#include "kforge/eval/precision_summary.h"
#include "runner_process.h"
#include "runner_protocol.h"
#include "timed_phase.h"
#include "timing_judgement.h"
#include "work_slot.h"

namespace kforge {
namespace {

using namespace file_modes;  // NOLINT(google-build-using-namespace): the modes read as words

namespace fs = std::filesystem;

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

std::string SignalName(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV (segmentation fault)";
    case SIGBUS:
      return "SIGBUS (bus error)";
    case SIGILL:
      return "SIGILL (illegal instruction)";
    case SIGFPE:
      return "SIGFPE (arithmetic exception)";
    case SIGABRT:
      return "SIGABRT (abort)";
    case SIGKILL:
      return "SIGKILL";
    case SIGXCPU:
      return "SIGXCPU (CPU time limit)";
    default:
      return fmt::format("signal {}", sig);
  }
}

// The last lines of a process's stderr, for a verdict's diagnostics.
std::string Tail(const std::string& text, std::size_t max_lines = 25) {
  std::size_t pos = text.size();
  for (std::size_t n = 0; n <= max_lines && pos != std::string::npos && pos > 0; ++n) {
    pos = text.rfind('\n', pos - 1);
  }
  return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

// A runner process that left no result: classify its death.
void ClassifyDeath(const ProcessResult& p, std::chrono::seconds timeout, std::string_view phase,
                   Verdict& v) {
  v.diagnostics = Tail(p.stderr_text);
  if (!p.limit_exceeded.empty()) {  // KForge stopped it for a limit it watches
    v.status = EvalStatus::kResourceLimit;
    v.message = fmt::format("the {} was stopped: {}", phase, p.limit_exceeded);
    return;
  }
  if (p.state == ProcessState::kTimedOut) {
    v.status = p.cancelled ? EvalStatus::kInfraError : EvalStatus::kTimeout;
    v.message = p.cancelled ? "cancelled"
                            : fmt::format(
                                  "the {} did not finish within {} s and was killed with "
                                  "its whole process group",
                                  phase, timeout.count());
    return;
  }
  if (p.term_signal == SIGKILL) {
    v.status = EvalStatus::kOutOfMemory;
    v.message =
        fmt::format("the {} was killed by SIGKILL, most likely by the out-of-memory killer", phase);
  } else if (p.term_signal == SIGXCPU) {
    v.status = EvalStatus::kTimeout;
    v.message = fmt::format("the {} exceeded its CPU-time limit", phase);
  } else if (p.term_signal != 0) {
    v.status = EvalStatus::kCrashed;
    v.message = fmt::format("the {} crashed: killed by {}", phase, SignalName(p.term_signal));
  } else {
    v.status = EvalStatus::kRuntimeError;
    v.message = fmt::format("the {} exited with code {} without a result", phase, p.exit_code);
  }
}

EvalStatus StatusFromRunner(const std::string& status) {
  auto parsed = ParseEvalStatus(status);
  return parsed ? *parsed : EvalStatus::kInfraError;
}

std::uint64_t FreshSeed() {
  static std::mutex mu;
  static std::random_device device;
  std::lock_guard lock(mu);
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

}  // namespace

fs::path DefaultWorkRoot() {
  const char* tmp = std::getenv("TMPDIR");
  return fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") /
         fmt::format("kforge-{}", ::geteuid());
}

Evaluator::Evaluator(CompileService& compiler, EvalOptions options)
    : compiler_(compiler), options_(std::move(options)) {
  if (options_.work_root.empty()) options_.work_root = DefaultWorkRoot();
  options_.trials = std::max(options_.trials, 2);
}

Evaluator::~Evaluator() = default;

Result<SlotConfig> Evaluator::ConfigFor(const Backend& backend) {
  auto runner_dir = InstallRunner(options_.work_root);
  if (!runner_dir) return std::unexpected(runner_dir.error());
  return SlotConfig{.work_root = options_.work_root,
                    .runner_dir = *runner_dir,
                    .device = backend.RunnerDevice(),
                    .uses_accelerator = backend.UsesAccelerator(),
                    .memory_limit_bytes = options_.memory_limit_bytes,
                    .process_limit = options_.process_limit,
                    .tmp_bytes = options_.tmp_bytes,
                    .shm_bytes = options_.shm_bytes,
                    .scratch_quota_bytes = options_.scratch_quota_bytes,
                    .open_files = options_.open_files,
                    .keep = options_.keep_work_dir,
                    .max_wait = std::chrono::seconds(1800),
                    .sandbox = options_.sandbox};
}

Result<std::unique_ptr<WorkSlot>> Evaluator::TakeSlot(const Backend& backend) {
  auto config = ConfigFor(backend);
  if (!config) return std::unexpected(config.error());
  std::unique_ptr<WorkSlot> slot;
  {
    std::lock_guard lock(mu_);
    // The oldest prepared slot has warmed longest; slots for another device, or whose runners
    // died while waiting, are dropped.
    while (!slot && !prepared_.empty()) {
      std::unique_ptr<WorkSlot> candidate = std::move(prepared_.front());
      prepared_.pop_front();
      if (candidate->config() == *config && candidate->alive()) slot = std::move(candidate);
    }
  }
  if (slot) return slot;
  return WorkSlot::Prepare(*config);
}

void Evaluator::TopUpPreparedSlots(const Backend& backend) {
  if (!options_.prepare_next) return;
  auto config = ConfigFor(backend);
  if (!config) return;
  const std::size_t depth =
      backend.UsesAccelerator() ? static_cast<std::size_t>(std::max(options_.prepare_depth, 1)) : 1;
  std::lock_guard lock(mu_);
  while (prepared_.size() < depth) {
    auto slot = WorkSlot::Prepare(*config);
    if (!slot) return;
    prepared_.push_back(std::move(*slot));
  }
}

// The compile baselines of the verdict: fresh from the reference, or from the cache when the
// reference ran under the environment the cache entry was made for.
void Evaluator::TakeBaselines(const Task& task, Verdict& v, const ReferenceResult& reference,
                              const std::string& runner_key,
                              const std::optional<std::string>& last_env,
                              const std::map<std::string, std::string>& cached,
                              BaselineCache& cache) {
  if (options_.baselines.empty()) return;
  const std::string env_now = NormalisedEnvironment(reference.environment_json);
  cache.SetLastEnvironment(runner_key, reference.environment_json);
  const bool cache_valid = last_env && NormalisedEnvironment(*last_env) == env_now;
  cache.Store(BaselineKey(task, v.target, reference.environment_json, options_.timing),
              reference.baselines_json);
  for (const auto& name : options_.baselines) {
    std::optional<TimingStats>* stats = &v.compile_baseline;
    std::string* error = &v.compile_baseline_error;
    bool* from_cache = &v.compile_baseline_cached;
    if (name == "compile-max-autotune") {
      stats = &v.compile_max_autotune_baseline;
      error = &v.compile_max_autotune_baseline_error;
      from_cache = &v.compile_max_autotune_baseline_cached;
    }
    if (auto fresh = reference.baselines.find(name); fresh != reference.baselines.end()) {
      *stats = fresh->second.stats;
      *error = fresh->second.error;
    } else if (auto hit = cached.find(name); hit != cached.end() && cache_valid) {
      TimingOutcome outcome = ParseTimingField(hit->second);
      *stats = outcome.stats;
      *error = outcome.error;
      *from_cache = true;
    } else {
      *error =
          "the cached figure was made with other library versions or another device; it "
          "is measured again on the next evaluation of this task";
    }
  }
}

const Calibration* Evaluator::CalibrationFor(const Backend& backend,
                                             const std::string& environment_json) {
  const auto env = nlohmann::json::parse(environment_json, nullptr, false);
  if (!env.is_object() || !env.contains("device_name") || !env["device_name"].is_string()) {
    return nullptr;
  }
  const std::string device = env["device_name"].get<std::string>();
  std::lock_guard lock(calibration_mu_);
  auto it = calibrations_.find(device);
  if (it != calibrations_.end() && it->second && CalibrationMatches(*it->second, environment_json)) {
    return it->second.get();
  }
  std::unique_ptr<Calibration> found;
  auto loaded = LoadCalibration(device);
  if (!loaded) spdlog::warn("calibration of {}: {}", device, loaded.error().message);
  if (loaded && *loaded && (CalibrationMatches(**loaded, environment_json) || !options_.calibrate)) {
    found = std::make_unique<Calibration>(**loaded);
  } else if (options_.calibrate) {
    spdlog::info("calibrating {} for this environment (once; `kforge calibrate` measures again)",
                 device);
    auto measured = CalibrateOnce(device, environment_json, [&] {
      return MeasureCalibration(backend, backend.target().ToString(), options_);
    });
    if (measured) {
      found = std::make_unique<Calibration>(std::move(*measured));
    } else {
      spdlog::warn("calibration of {} failed: {}", device, measured.error().message);
    }
  }
  auto& slot = calibrations_[device];
  slot = std::move(found);
  return slot.get();
}

Verdict Evaluator::Evaluate(const Task& task, const Backend& backend, const fs::path& candidate,
                            std::stop_token stop) {
  const auto start = SteadyClock::now();
  Verdict v;
  v.task_name = task.name;
  v.task_origin = task.origin;
  v.target = backend.target().ToString();
  v.device = backend.RunnerDevice();
  v.candidate = candidate.string();
  v.policy = options_.policy.value_or(task.policy);
  v.tolerance = ToleranceOf(v.policy);
  std::unique_ptr<WorkSlot> slot;
  // Step times (Verdict::steps): each mark closes the step that began at the previous one.
  auto last_mark = start;
  auto mark = [&](const char* step) {
    const auto now = SteadyClock::now();
    v.steps.emplace_back(step, std::chrono::duration<double>(now - last_mark).count());
    last_mark = now;
  };
  auto finish = [&]() -> Verdict {
    mark("finish");
    v.total_seconds = SecondsSince(start);
    spdlog::info("evaluate: {} on {}: {} ({:.2f} s)", task.name, v.target, EvalStatusName(v.status),
                 v.total_seconds);
    if (options_.keep_work_dir && slot) {
      spdlog::warn("kept the work folder {}", slot->work().string());
    }
    slot.reset();  // stops unused runners, removes the folder
    mark("cleanup");  // after `total`
    return v;
  };
  auto infra = [&](const Error& e) {
    v.status = EvalStatus::kInfraError;
    v.message = e.message;
    return finish();
  };

  // Step: what kind of candidate this is.
  auto kind = backend.KindOf(candidate);
  if (!kind) return infra(kind.error());
  v.candidate_kind = std::string(CandidateKindName(*kind));
  const bool compat = backend.IsKernelBenchCompat(*kind);
  v.mode = compat ? "kernelbench-compat" : "kforge";
  if (compat && !options_.policy) {
    // KernelBench's own rule is torch.allclose at atol = rtol = 1e-2: the compatibility mode
    // judges by it unless a policy is asked for (the report says which applied).
    v.policy = PrecisionPolicy::kMixed;
    v.tolerance = ToleranceOf(v.policy);
  }
  auto source = ReadFile(candidate);
  if (!source) return infra(source.error());

  // Step: static guardrails (EVAL-PROTOCOL), before anything compiles or starts; the findings
  // are written for the model that produced the candidate.
  if (options_.static_guardrails) {
    GuardrailOptions guard;
    guard.policy = v.policy;
    // KernelBench submissions may keep reference ops (nn.Linear, F.*) beside their own kernels
    // and KernelBench accepts them: the compatibility mode does too, so its verdicts match.
    guard.allow_reference_ops = options_.allow_reference_ops || compat;
    guard.task_low_precision = TaskUsesLowPrecision(task.source);
    guard.task_dimensions = TaskDimensions(task);
    const GuardrailReport report =
        CheckCandidate(*source, backend.traits().static_rules, *kind, guard);
    v.guardrail_flags = report.FlagLines();
    if (report.rejected()) {
      v.status = EvalStatus::kGuardrail;
      v.message =
          "the static guardrails rejected the candidate before compiling it; each finding "
          "says what was found, why it is not allowed and what to do instead";
      v.diagnostics = report.FormatRejects();
      return finish();
    }
  }

  mark("guardrails");
  // Step: the evaluation's folder, with both runners already warming up.
  auto taken = TakeSlot(backend);
  if (!taken) return infra(taken.error());
  slot = std::move(*taken);
  // The next evaluations' runners warm up (Python, torch, device context) while this one runs.
  TopUpPreparedSlots(backend);
  mark("take_slot");
  const fs::path task_file = slot->task_file();
  const fs::path candidate_file = slot->work() / ("candidate" + candidate.extension().string());
  std::error_code ec;
  for (const auto& [path, text] : {std::pair{task_file, std::string_view(task.source)},
                                   std::pair{candidate_file, std::string_view(*source)}}) {
    if (auto s = WriteFile(path, text); !s) return infra(s.error());
    fs::permissions(path, kReadableFile, ec);
  }

  // Step: compile (native) on the pool while the reference runs here.
  std::future<Result<CompileOutcome>> compiled;
  if (*kind == CandidateKind::kNative) compiled = compiler_.Submit(backend, candidate_file);

  // Step: the reference, on fresh secret seeds.
  std::mt19937_64 seeds(options_.seed.value_or(FreshSeed()));
  ReferenceJob ref_job;
  ref_job.task_file = task_file;
  ref_job.task = &task;
  ref_job.device = backend.RunnerDevice();
  ref_job.init_seed = seeds() >> 1;
  // The task's own distributions, then the shortcut-finding trials (EVAL-PROTOCOL rule 2).
  ref_job.trials = PlanTrials({.task_trials = options_.trials,
                               .shortcut_trials = options_.shortcut_trials,
                               .timing_sets = options_.timing_sets},
                              seeds);
  ref_job.truth = options_.truth;
  ref_job.policy = v.policy;
  ref_job.tolerance = v.tolerance;
  ref_job.inputs_dir = slot->inputs_dir();
  ref_job.outputs_dir = slot->outputs_dir();
  // The compile baselines this evaluation must time: those the cache lacks for this task under
  // the environment last seen on this target and device.
  BaselineCache baseline_cache;
  const std::string runner_key = v.target + "|" + backend.RunnerDevice();
  const std::optional<std::string> last_env =
      options_.baselines.empty() ? std::nullopt : baseline_cache.LastEnvironment(runner_key);
  std::map<std::string, std::string> cached_baselines;
  if (options_.time) {
    ref_job.timing = options_.timing;
    if (last_env) {
      cached_baselines =
          baseline_cache.Find(BaselineKey(task, v.target, *last_env, options_.timing));
    }
    for (const auto& name : options_.baselines) {
      if (!cached_baselines.contains(name)) ref_job.baselines.push_back(name);
    }
  }
  mark("prepare_reference");
  // A timed phase holds the host's gate (no compile on this host beside it; this evaluation's
  // own compile finishes first) and watches the load (src/eval/timed_phase.h).
  auto reference_phase = TimedPhase::Begin(options_.time, backend.RunnerDevice(),
                                           slot->reference().pid(), {slot->candidate().pid()},
                                           stop);
  if (!reference_phase) return infra(reference_phase.error());
  if (options_.time) mark("host_gate_reference");
  auto ref_run = slot->reference().Run(ReferenceJobJson(ref_job), options_.reference_timeout, stop);
  reference_phase->End(ref_run ? std::optional(ref_run->process.cpu_seconds) : std::nullopt, v,
                       v.reference_load);
  if (!ref_run) return infra(ref_run.error());
  v.reference_seconds = slot->reference().seconds_since_job();
  mark("reference");
  ReferenceResult reference;
  if (!ref_run->channel_problem.empty()) {
    return infra(Error{ErrorCode::kInternal, "the reference runner's result channel: " +
                                                 ref_run->channel_problem});
  }
  if (ref_run->process.result_text.empty()) {
    ClassifyDeath(ref_run->process, options_.reference_timeout, "reference", v);
    v.status = v.status == EvalStatus::kInfraError ? v.status : EvalStatus::kReferenceError;
    v.message = "the task's reference failed: " + v.message;
    return finish();
  }
  auto parsed_ref =
      ParseReferenceResult(ref_run->process.result_text, slot->inputs_dir(), slot->outputs_dir());
  if (!parsed_ref) return infra(parsed_ref.error());
  reference = std::move(*parsed_ref);
  v.skipped_trials = reference.skipped;
  v.reference_steps = reference.steps_json;
  v.degenerate = reference.degenerate;
  v.environment = reference.environment_json;
  if (options_.time && reference.status == "ok") {
    v.eager_baseline = reference.timing.stats;
    v.eager_baseline_error = reference.timing.error;
    v.work = reference.work;
    TakeBaselines(task, v, reference, runner_key, last_env, cached_baselines, baseline_cache);
  }
  if (reference.status != "ok") {
    v.status =
        reference.status == "infra_error" ? EvalStatus::kInfraError : EvalStatus::kReferenceError;
    v.message = "the task's reference failed (not the candidate's fault); fix the task";
    v.diagnostics = reference.diagnostics;
    return finish();
  }
  slot->SealReference();
  mark("seal_reference");

  // Step: the compile's outcome.
  fs::path artifact;
  if (compiled.valid()) {
    auto outcome = compiled.get();
    if (!outcome) return infra(outcome.error());
    v.compile_seconds = outcome->seconds;
    v.compile_cache_hit = outcome->cache_hit;
    if (!outcome->ok) {
      v.status = EvalStatus::kCompileError;
      v.message =
          outcome->timed_out ? "the compiler timed out" : "the compiler rejected the candidate";
      v.diagnostics = outcome->diagnostics;
      return finish();
    }
    artifact = slot->work() / "candidate.so";
    fs::copy_file(outcome->artifact, artifact, fs::copy_options::overwrite_existing, ec);
    if (ec)
      return infra(Error{ErrorCode::kIo, "cannot copy the compiled candidate: " + ec.message()});
    fs::permissions(artifact, kReadable, ec);
  }
  mark("compile_wait");

  // Step: the candidate, sandboxed, as another user, without sight of the reference outputs.
  CandidateJob cand_job;
  cand_job.task_file = task_file;
  cand_job.task = &task;
  cand_job.device = backend.RunnerDevice();
  cand_job.kind = v.candidate_kind;
  cand_job.backend = compat ? "kernelbench" : backend.RunnerBackendName();
  cand_job.artifact = artifact;
  if (*kind != CandidateKind::kNative) cand_job.source_file = candidate_file;
  cand_job.opencl_platform = backend.OpenClPlatform();
  cand_job.stream_handle = std::string(StreamHandleName(backend.traits().stream));
  cand_job.init_seed = ref_job.init_seed;
  cand_job.inputs_dir = slot->inputs_dir();
  cand_job.outputs_dir = slot->cand_dir();
  for (const auto& t : reference.trials) cand_job.expected_outputs.push_back(t.outputs);
  if (options_.time) cand_job.timing = options_.timing;
  // The runner writes every trial's outputs (and the address probe's) into the candidate's
  // scratch folder: they do not count against the candidate's quota.
  std::uint64_t output_bytes = 0;
  std::uint64_t largest_trial = 0;
  for (const auto& t : reference.trials) {
    std::uint64_t trial_bytes = 0;
    for (const auto& o : t.outputs) {
      trial_bytes += static_cast<std::uint64_t>(o.numel()) *
                     static_cast<std::uint64_t>(std::max(DtypeSize(o.dtype), 1));
    }
    output_bytes += trial_bytes;
    largest_trial = std::max(largest_trial, trial_bytes);
  }
  // The address probe writes one more trial's worth; file headers and metadata get the slack.
  slot->AllowCandidateOutputs(output_bytes + largest_trial + (64ull << 20));
  const auto cand_timeout =
      *kind == CandidateKind::kModule ? options_.module_timeout : options_.candidate_timeout;
  mark("prepare_candidate");
  auto candidate_phase = TimedPhase::Begin(options_.time, backend.RunnerDevice(),
                                           slot->candidate().pid(), {slot->reference().pid()},
                                           stop);
  if (!candidate_phase) return infra(candidate_phase.error());
  if (options_.time) mark("host_gate_candidate");
  auto cand_run = slot->candidate().Run(CandidateJobJson(cand_job), cand_timeout, stop);
  candidate_phase->End(cand_run ? std::optional(cand_run->process.cpu_seconds) : std::nullopt,
                       v, v.candidate_load);
  if (!cand_run) return infra(cand_run.error());
  v.candidate_seconds = slot->candidate().seconds_since_job();
  mark("candidate");
  v.isolation = (options_.sandbox ? options_.sandbox : DefaultSandbox())
                    ->isolation(slot->candidate().policy())
                    .Describe();
  // Dynamic guardrails (docs/redteam.md): a finding names its check as "[check-id]".
  auto dynamic_guardrail = [&](std::string_view finding, std::string diagnostics) {
    v.status = EvalStatus::kGuardrail;
    v.message = fmt::format("rejected by a dynamic guardrail: {}", finding);
    v.diagnostics = std::move(diagnostics);
    return finish();
  };
  if (!cand_run->process.limit_exceeded.empty()) {
    ClassifyDeath(cand_run->process, cand_timeout, "candidate", v);
    return finish();
  }
  if (!cand_run->channel_problem.empty()) {
    return dynamic_guardrail("[result-channel] " + cand_run->channel_problem,
                             Tail(cand_run->process.stderr_text));
  }
  if (cand_run->process.result_text.empty()) {
    ClassifyDeath(cand_run->process, cand_timeout, "candidate", v);
    return finish();
  }
  auto result = ParseCandidateResult(cand_run->process.result_text, slot->cand_dir());
  if (!result && result.error().code == ErrorCode::kPermissionDenied) {
    return dynamic_guardrail("[result-channel] " + result.error().message, "");
  }
  if (!result) {
    v.status = EvalStatus::kRuntimeError;
    v.message = "the candidate's process wrote a malformed result: " + result.error().message;
    return finish();
  }
  v.observed_isolation = result->observed_isolation_json;
  v.candidate_steps = result->steps_json;
  if (!result->tampering.empty()) {
    std::string all;
    for (const auto& line : result->tampering) all += line + "\n";
    return dynamic_guardrail(result->tampering.front(), all + result->diagnostics);
  }
  if (result->status != "ok") {
    v.status = StatusFromRunner(result->status);
    v.diagnostics = result->diagnostics;
    v.message = fmt::format("the candidate failed: {}", result->status);
    if (v.status == EvalStatus::kCompileError)
      v.message = "the device's compiler rejected the candidate";
    return finish();
  }

  mark("parse_candidate");
  // Step: compare every trial's outputs here, against files the candidate never saw.
  if (result->trials.size() != reference.trials.size()) {
    v.status = EvalStatus::kRuntimeError;
    v.message = fmt::format("the candidate ran {} trials of {}", result->trials.size(),
                            reference.trials.size());
    return finish();
  }
  // Every output judged at once, on several threads (eval/accuracy.h): the trials' outputs, then
  // the address probe's (against trial 1), which counts only when every trial passed.
  auto output_files = [](const ReferenceTrial& ref, const std::vector<TensorFile>& cand) {
    std::vector<OutputFiles> files;
    for (std::size_t m = 0; m < ref.outputs.size(); ++m) {
      const TensorFile* truth = m < ref.truth.size() && ref.truth[m] ? &*ref.truth[m] : nullptr;
      files.push_back({&cand[m], &ref.outputs[m], truth});
    }
    return files;
  };
  std::vector<OutputFiles> pairs;
  for (std::size_t k = 0; k < reference.trials.size(); ++k) {
    const auto& cand_outputs = result->trials[k].outputs;
    if (cand_outputs.size() != reference.trials[k].outputs.size()) continue;
    for (const auto& f : output_files(reference.trials[k], cand_outputs)) pairs.push_back(f);
  }
  const std::size_t probe_first = pairs.size();
  const bool probe_comparable = result->address_probe && reference.trials.size() >= 2 &&
                                result->address_probe->outputs.size() ==
                                    reference.trials[1].outputs.size();
  if (probe_comparable) {
    for (const auto& f : output_files(reference.trials[1], result->address_probe->outputs)) {
      pairs.push_back(f);
    }
  }
  std::vector<Result<OutputJudgement>> comparisons = JudgeOutputFiles(pairs, v.policy);
  std::size_t next_comparison = 0;
  bool all_ok = true;
  for (std::size_t k = 0; k < reference.trials.size(); ++k) {
    const auto& ref_trial = reference.trials[k];
    const auto& cand_trial = result->trials[k];
    TrialVerdict tv;
    tv.index = ref_trial.index;
    tv.distribution = ref_trial.distribution;
    tv.inputs_unchanged = cand_trial.inputs_unchanged;
    tv.ok = true;
    std::vector<std::string> problems = cand_trial.problems;
    if (cand_trial.outputs.size() != ref_trial.outputs.size()) {
      problems.push_back(fmt::format("returned {} outputs, the reference returns {}",
                                     cand_trial.outputs.size(), ref_trial.outputs.size()));
    } else {
      std::vector<OutputJudgement> judged;
      for (std::size_t m = 0; m < ref_trial.outputs.size(); ++m) {
        const auto& cmp = comparisons[next_comparison++];
        if (!cmp) return infra(cmp.error());
        if (!cmp->ok) problems.push_back(cmp->problem);
        judged.push_back(*cmp);
      }
      SummariseTrial(judged, tv);
    }
    if (!cand_trial.inputs_unchanged) problems.emplace_back("the candidate modified its inputs");
    if (!problems.empty()) {
      tv.ok = false;
      tv.problem = problems.front();
      all_ok = false;
    }
    v.trials.push_back(std::move(tv));
  }
  v.precision = SummarisePrecision(
      v.trials, v.policy,
      {reference.truth_requested, reference.truth_available, reference.truth_reason}, all_ok);
  // The address probe: trial 1's inputs in the buffers trial 0's had just used must give trial 1's
  // answer; a wrong one, where trial 1 itself was right, means results keyed on addresses (or
  // outputs skipped because they were written before).
  if (all_ok && result->address_probe && reference.trials.size() >= 2) {
    const auto& ref_trial = reference.trials[1];
    const auto& probe = *result->address_probe;
    std::string problem;
    if (!probe.problems.empty()) problem = probe.problems.front();
    if (problem.empty() && probe.outputs.size() != ref_trial.outputs.size()) {
      problem = fmt::format("returned {} outputs", probe.outputs.size());
    }
    for (std::size_t m = 0; problem.empty() && probe_comparable && m < ref_trial.outputs.size();
         ++m) {
      const auto& cmp = comparisons[probe_first + m];
      if (!cmp) return infra(cmp.error());
      if (!cmp->ok) problem = cmp->problem;
    }
    if (problem.empty() && !probe.inputs_unchanged) problem = "the candidate modified its inputs";
    if (!problem.empty()) {
      return dynamic_guardrail(
          "[address-reuse] trial 1's inputs, written into the buffers trial 0's inputs had just "
          "used (same addresses), gave a wrong answer although trial 1 in fresh buffers was "
          "right: the candidate reuses results keyed on buffer addresses or skips outputs it "
          "wrote before",
          problem);
    }
  }
  mark("compare");
  if (all_ok) {
    v.status = EvalStatus::kCorrect;
    v.message = fmt::format("matches the reference on {} trials", v.trials.size());
    if (v.precision.rule == "truth" && v.precision.worst_error_ratio) {
      v.message += fmt::format(" (its error against the float64 truth is at most {:.3g}x the "
                               "reference's own)",
                               *v.precision.worst_error_ratio);
    }
    if (v.precision.achieved != "strict" && !v.precision.achieved.empty()) {
      v.message += fmt::format("; meets {}, not strict: a lower-precision result, reported apart",
                               v.precision.achieved);
    }
    if (v.degenerate.any()) v.message += " (degenerate task: " + v.degenerate.Describe() + ")";
    if (options_.time) {
      // Step: the timing the runner took after the trials (only a correct candidate's counts).
      v.timing = result->timing.stats;
      v.timing_error = result->timing.error;
      JudgeTiming(v, CalibrationFor(backend, v.environment));
    }
  } else {
    v.status = EvalStatus::kMismatch;
    int failed = 0;
    std::string first;
    for (const auto& t : v.trials) {
      if (!t.ok) {
        if (first.empty())
          first = fmt::format("trial {} ({}): {}", t.index, t.distribution, t.problem);
        ++failed;
      }
    }
    v.message = fmt::format("wrong on {} of {} trials; {}", failed, v.trials.size(), first);
  }
  return finish();
}

}  // namespace kforge
