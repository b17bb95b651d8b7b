#include "kforge/eval/evaluator.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "baseline_cache.h"
#include "file_modes.h"
#include "harness_timing.h"
#include "kforge/core/files.h"
#include "kforge/core/sandbox.h"
#include "kforge/eval/accuracy.h"
#include "kforge/eval/calibration.h"
#include "kforge/eval/guardrails.h"
#include "kforge/eval/precision_summary.h"
#include "kforge/eval/tensor_view.h"
#include "kforge/eval/trial_plan.h"
#include "kforge/eval/harness_binary.h"
#include "kforge/eval/harness_session.h"
#include "native_harness.h"
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
    case SIGSYS:
      return "SIGSYS (a forbidden system call)";
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

// A process that left no result: classify its death.
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

bool NativeHarnessWanted(const EvalOptions& options) {
  const char* env = std::getenv("KFORGE_NATIVE_HARNESS");
  if (env != nullptr && std::string_view(env) == "0") return false;
  return options.native_harness;
}

// The bytes of a reference tensor file into `out` (exactly its size).
Status ReadInto(const fs::path& file, std::span<std::byte> out) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError(fmt::format("cannot open {}: {}", file.string(), std::strerror(errno)));
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  char extra = 0;
  const bool longer = ::read(fd, &extra, 1) == 1;
  ::close(fd);
  if (done != out.size() || longer) {
    return IoError(fmt::format("{} does not hold the {} bytes its manifest says", file.string(),
                               out.size()));
  }
  return Ok();
}

// Exactly the bytes of `file` (NaN matches NaN: bit patterns are compared).
bool SameBytesAsFile(const fs::path& file, std::span<const std::byte> bytes) {
  auto text = ReadFile(file);
  return text && text->size() == bytes.size() &&
         std::memcmp(text->data(), bytes.data(), bytes.size()) == 0;
}

TensorSpec SpecOf(const TensorFile& t) {
  return TensorSpec{
      .name = t.name, .dtype = t.dtype, .shape = t.shape, .scalar = t.scalar, .key = t.key};
}

// Runs `work(i)` for i in [0, n) on up to 16 threads.
void ParallelFor(std::size_t n, const std::function<void(std::size_t)>& work) {
  std::atomic<std::size_t> next{0};
  auto loop = [&] {
    for (std::size_t i = next++; i < n; i = next++) work(i);
  };
  const auto threads = static_cast<unsigned>(
      std::min<std::size_t>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u), n));
  std::vector<std::jthread> workers;
  for (unsigned t = 1; t < threads; ++t) workers.emplace_back(loop);
  loop();
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
  options_.timing_sets = std::max(options_.timing_sets, 2);
}

Evaluator::~Evaluator() = default;

Result<SlotConfig> Evaluator::ConfigFor(const Backend& backend) {
  auto runner_dir = InstallRunner(options_.work_root);
  if (!runner_dir) return std::unexpected(runner_dir.error());
  SlotConfig config{.work_root = options_.work_root,
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
                    .harness = {},
                    .warm_candidate = true,
                    .sandbox = options_.sandbox};
  if (const auto native = NativeHarnessOf(backend); native && NativeHarnessWanted(options_)) {
    auto binary = HarnessBinary(native->adapter);
    if (!binary) return std::unexpected(binary.error());
    config.harness = *binary;
  }
  return config;
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

// ----------------------------------------------------------------------------------------------
// The steps of one evaluation. Each step is a function over the evaluation's typed state; a step
// that settles the verdict returns false (the script then finishes). Each step ends with a mark
// (Verdict::steps) and a debug log line.

struct Evaluator::Steps {
  // One trial as the candidate answered it, in whichever process it ran.
  struct CandidateAnswer {
    std::vector<Result<OutputJudgement>> comparisons;  // one per reference output, or fewer
    std::size_t outputs = 0;                            // how many outputs it returned
    bool inputs_unchanged = true;
    std::vector<std::string> problems;
    std::vector<std::string> findings;  // "[check-id] ..." the harness saw (module harnesses)
  };

  Steps(Evaluator& e, const Task& t, const Backend& b, fs::path c, std::stop_token s)
      : ev(e), options(e.options_), task(t), backend(b), candidate(std::move(c)), stop(std::move(s)) {}

  Evaluator& ev;
  const EvalOptions& options;
  const Task& task;
  const Backend& backend;
  const fs::path candidate;
  const std::stop_token stop;

  const SteadyClock::time_point start = SteadyClock::now();
  SteadyClock::time_point last_mark = start;
  Verdict v;
  CandidateKind kind = CandidateKind::kNative;
  bool compat = false;
  std::optional<NativeHarness> native;  // set when the candidate runs in a harness
  std::string source;
  std::unique_ptr<WorkSlot> slot;
  fs::path candidate_file;
  std::future<Result<CompileOutcome>> compiled;
  std::mt19937_64 seeds;
  ReferenceJob ref_job;
  ReferenceResult reference;
  std::size_t correctness_trials = 0;  // reference.trials[0, n): trials; the rest: timing sets
  BaselineCache baseline_cache;
  std::string runner_key;
  std::optional<std::string> last_env;
  std::map<std::string, std::string> cached_baselines;
  fs::path artifact;
  std::unique_ptr<HarnessSession> harness;
  SteadyClock::time_point harness_start;
  std::string harness_environment;  // the harness's `hello` environment (JSON object text)
  std::vector<ProtocolCost> protocol_cost;
  std::vector<TimedSet> timed_sets;
  std::vector<CandidateAnswer> answers;
  std::optional<CandidateAnswer> probe;  // the address probe (trial 1 in trial 0's buffers)
  std::optional<CandidateResult> legacy;  // the Python runner's candidate phase

  // The candidate's process (its harness, or its Python runner once started): not load while
  // the reference's baselines are timed. 0 when none runs yet.
  pid_t CandidatePid() const {
    if (harness) return harness->pid();
    return slot->candidate_pid();
  }
  static std::vector<pid_t> Pids(std::initializer_list<pid_t> pids) {
    std::vector<pid_t> out;
    for (pid_t p : pids) if (p > 0) out.push_back(p);
    return out;
  }

  // The sandbox every process of this evaluation starts in.
  std::shared_ptr<const Sandbox> Sandboxes() const {
    return options.sandbox ? options.sandbox : DefaultSandbox();
  }

  void Mark(const char* step) {
    const auto now = SteadyClock::now();
    const double seconds = std::chrono::duration<double>(now - last_mark).count();
    v.steps.emplace_back(step, seconds);
    last_mark = now;
    spdlog::debug("evaluate {}: {} done ({:.3f} s)", task.name, step, seconds);
  }

  Verdict Finish() {
    Mark("finish");
    v.total_seconds = SecondsSince(start);
    spdlog::info("evaluate: {} on {}: {} ({:.2f} s)", task.name, v.target, EvalStatusName(v.status),
                 v.total_seconds);
    if (options.keep_work_dir && slot) spdlog::warn("kept the work folder {}", slot->work().string());
    harness.reset();  // quits the harness, removes its cgroup
    slot.reset();     // stops unused runners, removes the folder
    Mark("cleanup");  // after `total`
    return std::move(v);
  }

  bool Infra(const Error& e) {
    v.status = EvalStatus::kInfraError;
    v.message = e.message;
    return false;
  }

  // Dynamic guardrails (docs/redteam.md): a finding names its check as "[check-id]".
  bool DynamicGuardrail(std::string_view finding, std::string diagnostics) {
    v.status = EvalStatus::kGuardrail;
    v.message = fmt::format("rejected by a dynamic guardrail: {}", finding);
    v.diagnostics = std::move(diagnostics);
    return false;
  }

  // What a harness's problem means for the verdict.
  bool HarnessFailed(const HarnessProblem& p, std::string_view during) {
    switch (p.kind) {
      case HarnessProblem::Kind::kFailure:
        v.status = StatusFromRunner(p.status);
        v.message = fmt::format("the candidate failed {}: {}", during, p.status);
        if (v.status == EvalStatus::kCompileError) {
          v.message = "the candidate's shared object could not be loaded";
        }
        v.diagnostics = p.diagnostics;
        return false;
      case HarnessProblem::Kind::kEnded:
      case HarnessProblem::Kind::kTimedOut:
        ClassifyDeath(p.process, options.candidate_timeout, "candidate", v);
        v.message += fmt::format(" ({})", during);
        return false;
      case HarnessProblem::Kind::kProtocol:
        v.status = EvalStatus::kRuntimeError;
        v.message = fmt::format(
            "the harness's reply {} broke the protocol ({}): the candidate's code corrupted the "
            "process it runs in",
            during, p.message);
        v.diagnostics = Tail(p.diagnostics);
        return false;
      case HarnessProblem::Kind::kInfra:
        return Infra(Error{ErrorCode::kInternal, p.message});
    }
    return false;
  }

  Verdict Run() {
    v.task_name = task.name;
    v.task_origin = task.origin;
    v.target = backend.target().ToString();
    v.device = backend.RunnerDevice();
    v.candidate = candidate.string();
    v.policy = options.policy.value_or(task.policy);
    v.tolerance = ToleranceOf(v.policy);
    if (!StepKind() || !StepGuardrails() || !StepTakeSlot()) return Finish();
    StepStartCompile();
    if (!StepReference() || !StepAwaitCompile()) return Finish();
    if (native) {
      if (!StepStartHarness() || !StepHarnessTrials() || !StepHarnessAddressProbe()) {
        return Finish();
      }
    } else if (!StepLegacyCandidate()) {
      return Finish();
    }
    if (!StepCompare()) return Finish();
    if (options.time) {
      if (native) {
        StepHarnessTiming();
      } else {
        v.timing = legacy->timing.stats;
        v.timing_error = legacy->timing.error;
        Mark("timing");
      }
      if (v.status == EvalStatus::kCorrect) StepJudge();
    }
    return Finish();
  }

  // Step: what kind of candidate this is, and where it runs.
  bool StepKind() {
    auto k = backend.KindOf(candidate);
    if (!k) return Infra(k.error());
    kind = *k;
    v.candidate_kind = std::string(CandidateKindName(kind));
    compat = backend.IsKernelBenchCompat(kind);
    v.mode = compat ? "kernelbench-compat" : "kforge";
    if (compat && !options.policy) {
      // KernelBench's own rule is torch.allclose at atol = rtol = 1e-2: the compatibility mode
      // judges by it unless a policy is asked for (the report says which applied).
      v.policy = PrecisionPolicy::kMixed;
      v.tolerance = ToleranceOf(v.policy);
    }
    if (kind == CandidateKind::kNative && NativeHarnessWanted(options)) {
      native = NativeHarnessOf(backend);
    }
    auto text = ReadFile(candidate);
    if (!text) return Infra(text.error());
    source = std::move(*text);
    return true;
  }

  // Step: static guardrails (EVAL-PROTOCOL), before anything compiles or starts; the findings
  // are written for the model that produced the candidate.
  bool StepGuardrails() {
    if (options.static_guardrails) {
      GuardrailOptions guard;
      guard.policy = v.policy;
      // KernelBench submissions may keep reference ops (nn.Linear, F.*) beside their own kernels
      // and KernelBench accepts them: the compatibility mode does too, so its verdicts match.
      guard.allow_reference_ops = options.allow_reference_ops || compat;
      guard.task_low_precision = TaskUsesLowPrecision(task.source);
      guard.task_dimensions = TaskDimensions(task);
      const GuardrailReport report = CheckCandidate(source, backend.traits().static_rules, kind, guard);
      v.guardrail_flags = report.FlagLines();
      if (report.rejected()) {
        v.status = EvalStatus::kGuardrail;
        v.message =
            "the static guardrails rejected the candidate before compiling it; each finding "
            "says what was found, why it is not allowed and what to do instead";
        v.diagnostics = report.FormatRejects();
        return false;
      }
    }
    Mark("guardrails");
    return true;
  }

  // Step: the evaluation's folder, with its processes already warming up.
  bool StepTakeSlot() {
    auto taken = ev.TakeSlot(backend);
    if (!taken) return Infra(taken.error());
    slot = std::move(*taken);
    // The next evaluations' processes warm up (Python, torch, device context) while this runs.
    ev.TopUpPreparedSlots(backend);
    candidate_file = slot->work() / ("candidate" + candidate.extension().string());
    std::error_code ec;
    for (const auto& [path, text] : {std::pair{slot->task_file(), std::string_view(task.source)},
                                     std::pair{candidate_file, std::string_view(source)}}) {
      if (auto s = WriteFile(path, text); !s) return Infra(s.error());
      fs::permissions(path, kReadableFile, ec);
    }
    if (native) {
      harness = slot->TakeHarness();
      if (!harness) {
        return Infra(Error{ErrorCode::kUnavailable,
                           "the native harness did not start: " + slot->harness_error()});
      }
      harness->set_timeout(options.candidate_timeout);
    }
    Mark("take_slot");
    return true;
  }

  // Step: compile (native) on the pool while the reference runs.
  void StepStartCompile() {
    if (kind == CandidateKind::kNative) compiled = ev.compiler_.Submit(backend, candidate_file);
  }

  // Step: the reference, on fresh secret seeds: the trials, then (parent-driven timing) the
  // timing sets, drawn like trial 0 and never shown in a trial.
  bool StepReference() {
    seeds.seed(options.seed.value_or(FreshSeed()));
    ref_job.task_file = slot->task_file();
    ref_job.task = &task;
    ref_job.device = backend.RunnerDevice();
    ref_job.init_seed = seeds() >> 1;
    // The task's own distributions, then the shortcut-finding trials (EVAL-PROTOCOL rule 2), then
    // the timing sets: parent-driven timing rotates among at least two, never shown in a trial.
    const int timing_sets =
        options.time && native ? std::max(options.timing_sets, 2) : options.timing_sets;
    ref_job.trials = PlanTrials({.task_trials = options.trials,
                                 .shortcut_trials = options.shortcut_trials,
                                 .timing_sets = timing_sets},
                                seeds);
    ref_job.truth = options.truth;
    ref_job.policy = v.policy;
    ref_job.tolerance = v.tolerance;
    ref_job.inputs_dir = slot->inputs_dir();
    ref_job.outputs_dir = slot->outputs_dir();
    // The compile baselines this evaluation must time: those the cache lacks for this task under
    // the environment last seen on this target and device.
    runner_key = v.target + "|" + backend.RunnerDevice();
    last_env = options.baselines.empty() ? std::nullopt : baseline_cache.LastEnvironment(runner_key);
    if (options.time) {
      ref_job.timing = options.timing;
      if (last_env) {
        cached_baselines = baseline_cache.Find(BaselineKey(task, v.target, *last_env, options.timing));
      }
      for (const auto& name : options.baselines) {
        if (!cached_baselines.contains(name)) ref_job.baselines.push_back(name);
      }
    }
    Mark("prepare_reference");
    // A timed phase holds the host's gate (no compile on this host beside it; this evaluation's
    // own compile finishes first) and watches the load (src/eval/timed_phase.h).
    auto phase = TimedPhase::Begin(options.time, backend.RunnerDevice(), slot->reference().pid(),
                                   Pids({CandidatePid()}), stop);
    if (!phase) return Infra(phase.error());
    if (options.time) Mark("host_gate_reference");
    auto ref_run = slot->reference().Run(ReferenceJobJson(ref_job), options.reference_timeout, stop);
    phase->End(ref_run ? std::optional(ref_run->process.cpu_seconds) : std::nullopt, v,
               v.reference_load);
    if (!ref_run) return Infra(ref_run.error());
    v.reference_seconds = slot->reference().seconds_since_job();
    Mark("reference");
    if (!ref_run->channel_problem.empty()) {
      return Infra(Error{ErrorCode::kInternal,
                         "the reference runner's result channel: " + ref_run->channel_problem});
    }
    if (ref_run->process.result_text.empty()) {
      ClassifyDeath(ref_run->process, options.reference_timeout, "reference", v);
      v.status = v.status == EvalStatus::kInfraError ? v.status : EvalStatus::kReferenceError;
      v.message = "the task's reference failed: " + v.message;
      return false;
    }
    auto parsed =
        ParseReferenceResult(ref_run->process.result_text, slot->inputs_dir(), slot->outputs_dir());
    if (!parsed) return Infra(parsed.error());
    reference = std::move(*parsed);
    v.skipped_trials = reference.skipped;
    v.reference_steps = reference.steps_json;
    v.degenerate = reference.degenerate;
    v.environment = reference.environment_json;
    if (options.time && reference.status == "ok") {
      v.eager_baseline = reference.timing.stats;
      v.eager_baseline_error = reference.timing.error;
      v.work = reference.work;
      ev.TakeBaselines(task, v, reference, runner_key, last_env, cached_baselines, baseline_cache);
    }
    if (reference.status != "ok") {
      v.status =
          reference.status == "infra_error" ? EvalStatus::kInfraError : EvalStatus::kReferenceError;
      v.message = "the task's reference failed (not the candidate's fault); fix the task";
      v.diagnostics = reference.diagnostics;
      return false;
    }
    if (reference.trials.size() < 2) {
      return Infra(Error{ErrorCode::kInternal,
                         fmt::format("the reference ran {} trials of {}", reference.trials.size(),
                                     ref_job.trials.size())});
    }
    // The trials the reference wrote (skipped ones left out), then the timing sets: from here
    // reference.trials[k] for k >= correctness_trials is timing set k - correctness_trials.
    correctness_trials = reference.trials.size();
    for (auto& set : reference.timing_sets) reference.trials.push_back(std::move(set));
    reference.timing_sets.clear();
    slot->SealReference();
    Mark("seal_reference");
    return true;
  }

  // Step: the compile's outcome; the shared object goes where the candidate's process can read it.
  bool StepAwaitCompile() {
    if (compiled.valid()) {
      auto outcome = compiled.get();
      if (!outcome) return Infra(outcome.error());
      v.compile_seconds = outcome->seconds;
      v.compile_cache_hit = outcome->cache_hit;
      if (!outcome->ok) {
        v.status = EvalStatus::kCompileError;
        v.message = outcome->timed_out ? "the compiler timed out" : "the compiler rejected the candidate";
        v.diagnostics = outcome->diagnostics;
        return false;
      }
      artifact = (native ? slot->bin_dir() : slot->work()) / "candidate.so";
      std::error_code ec;
      fs::copy_file(outcome->artifact, artifact, fs::copy_options::overwrite_existing, ec);
      if (ec) return Infra(Error{ErrorCode::kIo, "cannot copy the compiled candidate: " + ec.message()});
      fs::permissions(artifact, kReadable, ec);
    }
    Mark("compile_wait");
    return true;
  }

  // `files` placed in the arena, their bytes read in.
  Result<std::vector<ArenaTensor>> Place(const std::vector<TensorFile>& files) {
    std::vector<ArenaTensor> placed;
    for (const TensorFile& f : files) {
      auto t = harness->Place(SpecOf(f));
      if (!t) return std::unexpected(t.error());
      KFORGE_RETURN_IF_ERROR(ReadInto(f.file, harness->Bytes(*t)));
      placed.push_back(*t);
    }
    return placed;
  }

  // The task inputs of reference trial `k` placed in the arena.
  Result<std::vector<ArenaTensor>> PlaceInputs(std::size_t k) { return Place(reference.trials[k].inputs); }

  Result<std::vector<ArenaTensor>> PlaceOutputs(std::size_t k) {
    std::vector<ArenaTensor> placed;
    for (const auto& o : reference.trials[k].outputs) {
      auto t = harness->Place(SpecOf(o));
      if (!t) return std::unexpected(t.error());
      placed.push_back(*t);
    }
    return placed;
  }

  // The arena one evaluation needs: the timing sets (kept for the whole run) and the largest
  // call (inputs, state, outputs and the inputs' copies after the call), with alignment slack.
  std::uint64_t ArenaBytes() const {
    auto bytes_of = [](const std::vector<TensorFile>& ts) {
      std::uint64_t n = 0;
      for (const auto& t : ts) n += SpecOf(t).bytes() + kArenaAlignment;
      return n;
    };
    std::uint64_t persistent = bytes_of(reference.state);
    std::uint64_t largest_call = 0;
    for (std::size_t k = 0; k < reference.trials.size(); ++k) {
      const auto& t = reference.trials[k];
      const std::uint64_t inputs = bytes_of(t.inputs);
      const std::uint64_t outputs = bytes_of(t.outputs);
      if (k < correctness_trials) {
        largest_call = std::max(largest_call, 2 * inputs + outputs);
      } else {
        persistent += inputs + outputs;
      }
    }
    return persistent + largest_call + (1 << 16);
  }

  // Step: the harness, started warm with the slot: hello (the arena sized now), the timing sets
  // and the empty samples (before any candidate code is in the process), then load.
  bool StepStartHarness() {
    harness_start = SteadyClock::now();
    auto hello = harness->Hello({.device = backend.RunnerDevice(), .arena_bytes = ArenaBytes()});
    if (!hello) return HarnessFailed(hello.error(), "starting");
    v.observed_isolation = hello->observed_isolation_json;
    harness_environment = hello->environment_json;
    v.isolation = Sandboxes()->isolation(SandboxPolicy{}).Describe() +
                  fmt::format("; harness {}, freeze by {}", hello->harness,
                              FreezeMethodName(harness->freeze_method()));
    if (options.time) {
      std::vector<TimingSet> sets;
      for (std::size_t k = correctness_trials; k < reference.trials.size(); ++k) {
        auto inputs = PlaceInputs(k);
        if (!inputs) return Infra(inputs.error());
        auto outputs = PlaceOutputs(k);
        if (!outputs) return Infra(outputs.error());
        sets.push_back({*inputs, *outputs});
        timed_sets.push_back({*inputs, *outputs, reference.trials[k].outputs,
                              reference.trials[k].truth});
      }
      auto prepared = harness->PrepareTiming({.sets = sets, .clock = native->sample_mode});
      if (!prepared) return HarnessFailed(prepared.error(), "preparing timing");
      std::vector<std::string> modes = {native->check_mode};
      if (native->sample_mode != native->check_mode) modes.push_back(native->sample_mode);
      if (native->sample_mode == "cold") modes.push_back("warm");
      // The empty samples are timings too (every later sample has their median subtracted):
      // they hold the host's gate and their load is watched like the candidate's.
      auto phase = TimedPhase::Begin(true, backend.RunnerDevice(), harness->pid(),
                                     Pids({slot->reference().pid()}), stop);
      if (!phase) return Infra(phase.error());
      auto cost = MeasureProtocolCost(*harness, static_cast<int>(sets.size()), modes, 15);
      phase->End(std::nullopt, v, v.candidate_load);
      if (!cost) return HarnessFailed(cost.error(), "measuring the protocol's cost");
      protocol_cost = std::move(*cost);
    }
    // The state tensors stay in the arena (and in the harness's buffers) for the whole run.
    auto state = Place(reference.state);
    if (!state) return Infra(state.error());
    LoadRequest load;
    load.kind = "native";
    load.artifact = artifact;
    load.state = *state;
    load.stream_handle = native->stream_handle;
    auto loaded = harness->Load(load);
    if (!loaded) return HarnessFailed(loaded.error(), "while being loaded");
    Mark("harness_start");
    return true;
  }

  // One call through the harness on reference trial `k`'s inputs; the answer compared with
  // reference trial `compare_with` (k itself, or trial 1 for the address probe).
  Result<std::optional<CandidateAnswer>> HarnessCall(std::size_t k, std::size_t compare_with,
                                                     bool reuse, HarnessProblem* problem) {
    const std::uint64_t mark = harness->arena().used();
    auto inputs = PlaceInputs(k);
    if (!inputs) return std::unexpected(inputs.error());
    auto outputs = PlaceOutputs(compare_with);
    if (!outputs) return std::unexpected(outputs.error());
    std::vector<ArenaRegion> after;
    for (const auto& in : *inputs) {
      auto r = harness->arena().Allocate(in.region.bytes);
      if (!r) return std::unexpected(r.error());
      after.push_back(*r);
    }
    auto reply = harness->Call({.inputs = *inputs, .outputs = *outputs, .inputs_after = after,
                                .reuse = reuse});
    harness->arena().ResetTo(mark);
    if (!reply) {
      *problem = reply.error();
      return std::optional<CandidateAnswer>();
    }
    CandidateAnswer a;
    a.outputs = reply->outputs.size();
    a.problems = reply->problems;
    a.findings = reply->findings;
    const auto& ref = reference.trials[compare_with];
    const auto& originals = reference.trials[k].inputs;
    for (std::size_t i = 0; i < originals.size() && i < reply->inputs_after.size(); ++i) {
      a.inputs_unchanged = a.inputs_unchanged &&
                           SameBytesAsFile(originals[i].file, reply->inputs_after[i].data);
    }
    a.comparisons.resize(std::min(ref.outputs.size(), reply->outputs.size()),
                         Result<OutputJudgement>(OutputJudgement{}));
    ParallelFor(a.comparisons.size(), [&](std::size_t m) {
      const TensorFile* truth = m < ref.truth.size() && ref.truth[m] ? &*ref.truth[m] : nullptr;
      a.comparisons[m] = JudgeFrozenOutput(ref.outputs[m], truth, reply->outputs[m], v.policy);
    });
    return std::optional<CandidateAnswer>(std::move(a));
  }

  // Step: the trials, one at a time: trial k's inputs enter the harness's arena only now.
  bool StepHarnessTrials() {
    for (std::size_t k = 0; k < correctness_trials; ++k) {
      HarnessProblem problem;
      auto answer = HarnessCall(k, k, /*reuse=*/false, &problem);
      if (!answer) return Infra(answer.error());
      if (!*answer) return HarnessFailed(problem, fmt::format("in trial {}", k));
      answers.push_back(std::move(**answer));
    }
    Mark("trials");
    return true;
  }

  // Step: the address probe: trial 0's inputs, then trial 1's written into the very buffers
  // trial 0's had used (the outputs re-poisoned): a result cached by buffer address, or an output
  // skipped because it was "already written", gives trial 0's answer for trial 1.
  bool StepHarnessAddressProbe() {
    const auto& t0 = reference.trials[0];
    const auto& t1 = reference.trials[1];
    auto layout = [](const std::vector<TensorFile>& a, const std::vector<TensorFile>& b) {
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].dtype != b[i].dtype || a[i].shape != b[i].shape) return false;
      }
      return true;
    };
    if (layout(t0.inputs, t1.inputs) && layout(t0.outputs, t1.outputs)) {
      HarnessProblem problem;
      auto first = HarnessCall(0, 0, /*reuse=*/false, &problem);
      if (!first) return Infra(first.error());
      if (!*first) return HarnessFailed(problem, "in the address probe");
      auto second = HarnessCall(1, 1, /*reuse=*/true, &problem);
      if (!second) return Infra(second.error());
      if (!*second) return HarnessFailed(problem, "in the address probe");
      probe = std::move(**second);
    }
    v.candidate_seconds = SecondsSince(harness_start);
    Mark("address_probe");
    return true;
  }

  // Step (opencl and module candidates; native ones with the harness off): the Python runner's
  // candidate phase, sandboxed, as another user, without sight of the reference outputs.
  bool StepLegacyCandidate() {
    CandidateJob job;
    job.task_file = slot->task_file();
    job.task = &task;
    job.device = backend.RunnerDevice();
    job.kind = v.candidate_kind;
    job.backend = compat ? "kernelbench" : backend.RunnerBackendName();
    job.artifact = artifact;
    if (kind != CandidateKind::kNative) job.source_file = candidate_file;
    job.opencl_platform = backend.OpenClPlatform();
    job.stream_handle = std::string(StreamHandleName(backend.traits().stream));
    job.init_seed = ref_job.init_seed;
    job.inputs_dir = slot->inputs_dir();
    job.outputs_dir = slot->cand_dir();
    for (std::size_t k = 0; k < correctness_trials; ++k) {
      job.expected_outputs.push_back(reference.trials[k].outputs);
    }
    if (options.time) job.timing = options.timing;
    // The runner writes every trial's outputs (and the address probe's) into the candidate's
    // scratch folder: they do not count against the candidate's quota.
    std::uint64_t output_bytes = 0;
    std::uint64_t largest_trial = 0;
    for (std::size_t k = 0; k < correctness_trials; ++k) {
      std::uint64_t trial_bytes = 0;
      for (const auto& o : reference.trials[k].outputs) {
        trial_bytes += static_cast<std::uint64_t>(o.numel()) *
                       static_cast<std::uint64_t>(std::max(DtypeSize(o.dtype), 1));
      }
      output_bytes += trial_bytes;
      largest_trial = std::max(largest_trial, trial_bytes);
    }
    // The address probe writes one more trial's worth; file headers and metadata get the slack.
    slot->AllowCandidateOutputs(output_bytes + largest_trial + (64ull << 20));
    const auto timeout = kind == CandidateKind::kModule ? options.module_timeout : options.candidate_timeout;
    Mark("prepare_candidate");
    auto phase = TimedPhase::Begin(options.time, backend.RunnerDevice(), slot->candidate().pid(),
                                   Pids({slot->reference().pid()}), stop);
    if (!phase) return Infra(phase.error());
    if (options.time) Mark("host_gate_candidate");
    auto run = slot->candidate().Run(CandidateJobJson(job), timeout, stop);
    phase->End(run ? std::optional(run->process.cpu_seconds) : std::nullopt, v, v.candidate_load);
    if (!run) return Infra(run.error());
    v.candidate_seconds = slot->candidate().seconds_since_job();
    Mark("candidate");
    v.isolation = Sandboxes()->isolation(slot->candidate().policy()).Describe();
    if (!run->process.limit_exceeded.empty()) {
      ClassifyDeath(run->process, timeout, "candidate", v);
      return false;
    }
    if (!run->channel_problem.empty()) {
      return DynamicGuardrail("[result-channel] " + run->channel_problem,
                              Tail(run->process.stderr_text));
    }
    if (run->process.result_text.empty()) {
      ClassifyDeath(run->process, timeout, "candidate", v);
      return false;
    }
    auto result = ParseCandidateResult(run->process.result_text, slot->cand_dir());
    if (!result && result.error().code == ErrorCode::kPermissionDenied) {
      return DynamicGuardrail("[result-channel] " + result.error().message, "");
    }
    if (!result) {
      v.status = EvalStatus::kRuntimeError;
      v.message = "the candidate's process wrote a malformed result: " + result.error().message;
      return false;
    }
    v.observed_isolation = result->observed_isolation_json;
    v.candidate_steps = result->steps_json;
    if (!result->tampering.empty()) {
      std::string all;
      for (const auto& line : result->tampering) all += line + "\n";
      return DynamicGuardrail(result->tampering.front(), all + result->diagnostics);
    }
    if (result->status != "ok") {
      v.status = StatusFromRunner(result->status);
      v.diagnostics = result->diagnostics;
      v.message = fmt::format("the candidate failed: {}", result->status);
      if (v.status == EvalStatus::kCompileError) v.message = "the device's compiler rejected the candidate";
      return false;
    }
    Mark("parse_candidate");
    if (result->trials.size() != correctness_trials) {
      v.status = EvalStatus::kRuntimeError;
      v.message = fmt::format("the candidate ran {} trials of {}", result->trials.size(), correctness_trials);
      return false;
    }
    // Every comparison at once, on several threads: the trials' outputs, then the address
    // probe's (against trial 1).
    std::vector<OutputFiles> pairs;
    std::vector<std::pair<std::size_t, std::size_t>> where;  // (answer, output); answer n: probe
    auto add = [&](const ReferenceTrial& ref, const std::vector<TensorFile>& cand, std::size_t a) {
      const std::size_t n = std::min(ref.outputs.size(), cand.size());
      for (std::size_t m = 0; m < n; ++m) {
        const TensorFile* truth = m < ref.truth.size() && ref.truth[m] ? &*ref.truth[m] : nullptr;
        pairs.push_back({&cand[m], &ref.outputs[m], truth});
        where.emplace_back(a, m);
      }
    };
    for (std::size_t k = 0; k < correctness_trials; ++k) {
      add(reference.trials[k], result->trials[k].outputs, k);
    }
    if (result->address_probe) {
      add(reference.trials[1], result->address_probe->outputs, correctness_trials);
    }
    auto comparisons = JudgeOutputFiles(pairs, v.policy);
    answers.resize(correctness_trials);
    for (std::size_t k = 0; k < correctness_trials; ++k) {
      answers[k].outputs = result->trials[k].outputs.size();
      answers[k].inputs_unchanged = result->trials[k].inputs_unchanged;
      answers[k].problems = result->trials[k].problems;
    }
    if (result->address_probe) {
      probe = CandidateAnswer{};
      probe->outputs = result->address_probe->outputs.size();
      probe->inputs_unchanged = result->address_probe->inputs_unchanged;
      probe->problems = result->address_probe->problems;
    }
    for (std::size_t i = 0; i < comparisons.size(); ++i) {
      CandidateAnswer& a = where[i].first == correctness_trials ? *probe : answers[where[i].first];
      a.comparisons.push_back(std::move(comparisons[i]));
    }
    legacy = std::move(*result);
    return true;
  }

  // Step: every trial's answer against the reference, here; then the address probe, which counts
  // only when every trial passed.
  bool StepCompare() {
    // What the harness saw candidate code do to it: a claim against the candidate, believed.
    for (const auto& answer : answers) {
      if (!answer.findings.empty()) {
        std::string all;
        for (const auto& f : answer.findings) all += f + "\n";
        return DynamicGuardrail(answer.findings.front(), all);
      }
    }
    if (probe && !probe->findings.empty()) return DynamicGuardrail(probe->findings.front(), "");
    bool all_ok = true;
    for (std::size_t k = 0; k < correctness_trials; ++k) {
      const auto& ref_trial = reference.trials[k];
      const CandidateAnswer& a = answers[k];
      TrialVerdict tv;
      tv.index = ref_trial.index;
      tv.distribution = ref_trial.distribution;
      tv.inputs_unchanged = a.inputs_unchanged;
      tv.ok = true;
      std::vector<std::string> problems = a.problems;
      if (a.outputs != ref_trial.outputs.size()) {
        problems.push_back(fmt::format("returned {} outputs, the reference returns {}", a.outputs,
                                       ref_trial.outputs.size()));
      } else {
        std::vector<OutputJudgement> judged;
        for (const auto& cmp : a.comparisons) {
          if (!cmp) return Infra(cmp.error());
          if (!cmp->ok) problems.push_back(cmp->problem);
          judged.push_back(*cmp);
        }
        SummariseTrial(judged, tv);
      }
      if (!a.inputs_unchanged) problems.emplace_back("the candidate modified its inputs");
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
    if (all_ok && probe) {
      const auto& ref_trial = reference.trials[1];
      std::string problem;
      if (!probe->problems.empty()) problem = probe->problems.front();
      if (problem.empty() && probe->outputs != ref_trial.outputs.size()) {
        problem = fmt::format("returned {} outputs", probe->outputs);
      }
      for (const auto& cmp : probe->comparisons) {
        if (!problem.empty()) break;
        if (!cmp) return Infra(cmp.error());
        if (!cmp->ok) problem = cmp->problem;
      }
      if (problem.empty() && !probe->inputs_unchanged) problem = "the candidate modified its inputs";
      if (!problem.empty()) {
        return DynamicGuardrail(
            "[address-reuse] trial 1's inputs, written into the buffers trial 0's inputs had "
            "just used (same addresses), gave a wrong answer although trial 1 in fresh buffers "
            "was right: the candidate reuses results keyed on buffer addresses or skips outputs "
            "it wrote before",
            problem);
      }
    }
    Mark("compare");
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
      return true;
    }
    v.status = EvalStatus::kMismatch;
    int failed = 0;
    std::string first;
    for (const auto& t : v.trials) {
      if (!t.ok) {
        if (first.empty()) first = fmt::format("trial {} ({}): {}", t.index, t.distribution, t.problem);
        ++failed;
      }
    }
    v.message = fmt::format("wrong on {} of {} trials; {}", failed, v.trials.size(), first);
    return false;
  }

  // Step (native, correct, timed): parent-driven timing through the harness. A timed sample
  // that was wrong, or a child clock the parent's clock contradicts, is a dynamic guardrail: the
  // candidate did less when timed, or its time was not what it claimed.
  void StepHarnessTiming() {
    HarnessTimingRequest request;
    request.options = options.timing;
    request.headline_mode = native->sample_mode;
    request.check_mode = native->check_mode;
    request.side_figures = native->sample_mode == "cold";
    request.policy = v.policy;
    request.seed = seeds();
    // The device's maximum SM clock, as the harness read it before any candidate code loaded.
    const auto env = nlohmann::json::parse(harness_environment, nullptr, false);
    if (env.is_object() && env.contains("max_sm_mhz") && env["max_sm_mhz"].is_number_integer()) {
      request.max_sm_mhz = env["max_sm_mhz"].get<int>();
    }
    auto phase = TimedPhase::Begin(true, backend.RunnerDevice(), harness->pid(),
                                   Pids({slot->reference().pid()}), stop);
    if (!phase) {
      Infra(phase.error());
      return;
    }
    Mark("host_gate_candidate");
    const HarnessTimingOutcome t = TimeThroughHarness(*harness, timed_sets, protocol_cost, request);
    phase->End(std::nullopt, v, v.candidate_load);
    v.candidate_seconds = SecondsSince(harness_start);
    Mark("timing");
    if (!t.findings.empty()) {
      std::string all;
      for (const auto& f : t.findings) all += f + "\n";
      DynamicGuardrail(t.findings.front(), all);
      return;
    }
    if (!t.timed_mismatch.empty()) {
      DynamicGuardrail(
          "[timed-mismatch] the outputs of a timed call differ from the reference although every "
          "trial was right: the candidate does less when it is timed",
          t.timed_mismatch);
      return;
    }
    if (t.clock_check.done && (!t.clock_check.ok || !t.clock_check.events_ok)) {
      DynamicGuardrail(
          "[clock-check] the time the candidate's process reported is contradicted by the "
          "parent's clock: work ran outside the timed region, or the process's clock was altered",
          t.clock_check.Describe());
      return;
    }
    if (t.problem && t.problem->kind != HarnessProblem::Kind::kFailure) {
      // The harness ended while timed: a crash in a timed call is the candidate's verdict.
      HarnessFailed(*t.problem, "while timed");
      return;
    }
    v.timing = t.stats;
    v.timing_error = t.stats ? "" : (t.error.empty() ? "no timing" : t.error);
  }

  // Step: what a correct candidate's timing means: speedups, physics floor, review holds.
  void StepJudge() {
    JudgeTiming(v, ev.CalibrationFor(backend, v.environment));
    Mark("judge");
  }
};

Verdict Evaluator::Evaluate(const Task& task, const Backend& backend, const fs::path& candidate,
                            std::stop_token stop) {
  Steps steps(*this, task, backend, candidate, std::move(stop));
  return steps.Run();
}

}  // namespace kforge
