#include "kforge/eval/evaluator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <atomic>
#include <future>
#include <mutex>
#include <random>

#include "kforge/core/files.h"
#include "kforge/core/hash.h"
#include "kforge/core/sandbox.h"
#include "kforge/core/subprocess.h"
#include "kforge/target/probe.h"
#include "runner_protocol.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr uid_t kNobody = 65534;
constexpr auto kReadable = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec;
constexpr auto kTraversable = fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

fs::path DefaultWorkRoot() {
  const char* tmp = std::getenv("TMPDIR");
  return fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") /
         fmt::format("kforge-{}", ::geteuid());
}

// Copies runner/kforge_runner to a folder every user can read (KForge's own tree may sit in a
// private home), keyed by content so that concurrent evaluations share one copy.
Result<fs::path> InstallRunner(const fs::path& work_root) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  const fs::path source = KforgeHome() / "runner" / "kforge_runner";
  if (!fs::exists(source / "__main__.py")) {
    return Unavailable(fmt::format(
        "the runner package is missing at {} (set KFORGE_HOME to KForge's source folder)",
        source.string()));
  }
  Hasher hasher;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(source)) {
    if (e.is_regular_file() && e.path().extension() != ".pyc") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto text = ReadFile(f);
    if (!text) return std::unexpected(text.error());
    hasher.Add(fs::relative(f, source).string()).Add(*text);
  }
  const fs::path target = work_root / fmt::format("runner-{}", hasher.Hex().substr(0, 16));
  if (fs::exists(target / "kforge_runner" / "__main__.py")) return target;
  const fs::path tmp = work_root / fmt::format(".runner-{}", ::getpid());
  fs::remove_all(tmp);
  std::error_code ec;
  fs::create_directories(tmp, ec);
  fs::copy(source, tmp / "kforge_runner", fs::copy_options::recursive, ec);
  if (ec) return IoError(fmt::format("cannot copy the runner to {}: {}", tmp.string(), ec.message()));
  for (const auto& e : fs::recursive_directory_iterator(tmp)) {
    fs::permissions(e.path(), e.is_directory() ? kReadable : kReadable & ~(fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec) , ec);
  }
  fs::permissions(tmp, kReadable, ec);
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove_all(tmp);
    if (!fs::exists(target)) return IoError(fmt::format("cannot install the runner: {}", ec.message()));
  }
  return target;
}

// The runner's environment: an allow-list, so that API keys and the like never reach candidates.
std::vector<std::string> RunnerEnvironment(const fs::path& runner_dir, const fs::path& scratch) {
  std::vector<std::string> env;
  static const char* kPassThrough[] = {"PATH", "LD_LIBRARY_PATH", "LANG", "LC_ALL", "CUDA_HOME",
                                       "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
                                       "HIP_VISIBLE_DEVICES", "ROCM_PATH", "OCL_ICD_VENDORS",
                                       "OCL_ICD_FILENAMES", "POCL_DEVICES", "OMP_NUM_THREADS",
                                       "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST"};
  for (const char* name : kPassThrough) {
    if (const char* value = std::getenv(name)) env.push_back(fmt::format("{}={}", name, value));
  }
  // Python site packages added by the user for the runner (e.g. carried wheels).
  std::string pythonpath = runner_dir.string();
  if (const char* extra = std::getenv("KFORGE_RUNNER_PYTHONPATH"); extra != nullptr && *extra) {
    pythonpath += std::string(":") + extra;
  }
  env.push_back("PYTHONPATH=" + pythonpath);
  env.push_back("HOME=" + scratch.string());
  env.push_back("TRITON_CACHE_DIR=" + (scratch / ".triton").string());
  env.push_back("TORCH_EXTENSIONS_DIR=" + (scratch / ".torch_extensions").string());
  env.push_back("PYTHONDONTWRITEBYTECODE=1");
  env.push_back("PYTHONUNBUFFERED=1");
  return env;
}

struct RunnerRun {
  ProcessResult process;
  double seconds = 0;
};

// How one runner process is started.
struct RunnerLaunch {
  fs::path job_file;
  std::string job_json;      // written before the start; empty: the caller writes it later
  std::string preload;       // warm start: the device to initialise while waiting for the job
  std::shared_ptr<std::atomic<std::int64_t>> deadline;  // movable deadline (warm start)
  std::chrono::seconds timeout{0};
};

// One runner phase: job file in, result document out through fd 3.
Result<RunnerRun> RunRunner(const RunnerLaunch& launch, const fs::path& runner_dir,
                            const fs::path& scratch, const SandboxPolicy& policy,
                            const ResourceLimits& limits, std::stop_token stop) {
  if (!launch.job_json.empty()) {
    KFORGE_RETURN_IF_ERROR(WriteFile(launch.job_file, launch.job_json));
    std::error_code ec;
    fs::permissions(launch.job_file, kReadable & ~fs::perms::others_exec & ~fs::perms::group_exec &
                                         ~fs::perms::owner_exec, ec);
  }
  if (RunnerPython().empty()) {
    return Unavailable(
        "no Python with torch for the runner: apt-get install python3-torch, or set "
        "KFORGE_PYTHON to an interpreter that can import torch");
  }
  ProcessSpec spec;
  spec.argv = {RunnerPython(), "-m", "kforge_runner", "--job", launch.job_file.string(),
               "--result-fd", std::to_string(kResultFd)};
  if (!launch.preload.empty()) spec.argv.insert(spec.argv.end(), {"--preload", launch.preload});
  spec.env = RunnerEnvironment(runner_dir, scratch);
  spec.cwd = scratch;
  spec.timeout = launch.timeout;
  spec.deadline = launch.deadline;
  spec.limits = limits;
  spec.result_pipe = true;
  auto start = Clock::now();
  auto wrapped = DefaultSandbox()->Wrap(std::move(spec), policy);
  auto r = RunProcess(wrapped, stop);
  if (!r) return std::unexpected(r.error());
  return RunnerRun{std::move(*r), SecondsSince(start)};
}

std::int64_t SteadyNanos(Clock::time_point t) {
  return std::chrono::nanoseconds(t.time_since_epoch()).count();
}

std::string SignalName(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV (segmentation fault)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGFPE: return "SIGFPE (arithmetic exception)";
    case SIGABRT: return "SIGABRT (abort)";
    case SIGKILL: return "SIGKILL";
    case SIGXCPU: return "SIGXCPU (CPU time limit)";
    default: return fmt::format("signal {}", sig);
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
void ClassifyDeath(ProcessResult p, std::chrono::seconds timeout, std::string_view phase,
                   Verdict& v) {
  v.diagnostics = Tail(p.stderr_text);
  // bubblewrap (like a shell) reports a child killed by signal N as exit code 128 + N.
  if (p.term_signal == 0 && p.exit_code > 128 && p.exit_code < 128 + 65 &&
      DefaultSandbox()->isolation({}).mechanism == "bubblewrap") {
    p.term_signal = p.exit_code - 128;
  }
  if (p.state == ProcessState::kTimedOut) {
    v.status = p.cancelled ? EvalStatus::kInfraError : EvalStatus::kTimeout;
    v.message = p.cancelled ? "cancelled"
                            : fmt::format("the {} did not finish within {} s and was killed with "
                                          "its whole process group",
                                          phase, timeout.count());
    return;
  }
  if (p.term_signal == SIGKILL) {
    v.status = EvalStatus::kOutOfMemory;
    v.message = fmt::format("the {} was killed by SIGKILL, most likely by the out-of-memory killer",
                            phase);
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

Evaluator::Evaluator(CompileService& compiler, EvalOptions options)
    : compiler_(compiler), options_(std::move(options)) {
  if (options_.work_root.empty()) options_.work_root = DefaultWorkRoot();
  options_.trials = std::max(options_.trials, 2);
}

Verdict Evaluator::Evaluate(const Task& task, const Backend& backend, const fs::path& candidate,
                            std::stop_token stop) {
  const auto start = Clock::now();
  Verdict v;
  v.task_name = task.name;
  v.task_origin = task.origin;
  v.target = backend.target().ToString();
  v.candidate = candidate.string();
  v.policy = options_.policy.value_or(task.policy);
  v.tolerance = ToleranceOf(v.policy);
  auto finish = [&]() -> Verdict {
    v.total_seconds = SecondsSince(start);
    spdlog::info("evaluate: {} on {}: {} ({:.2f} s)", task.name, v.target,
                 EvalStatusName(v.status), v.total_seconds);
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
  const bool compat = *kind == CandidateKind::kModule &&
                      (backend.target().model == ProgrammingModel::kCuda ||
                       backend.target().model == ProgrammingModel::kCpp ||
                       backend.target().model == ProgrammingModel::kHip);
  v.mode = compat ? "kernelbench-compat" : "kforge";
  if (compat && !options_.policy) {
    // KernelBench's own rule is torch.allclose at atol = rtol = 1e-2: the compatibility mode
    // judges by it unless a policy is asked for (the report says which applied).
    v.policy = PrecisionPolicy::kMixed;
    v.tolerance = ToleranceOf(v.policy);
  }
  auto source = ReadFile(candidate);
  if (!source) return infra(source.error());

  // Step: the evaluation's private folder.
  std::error_code ec;
  fs::create_directories(options_.work_root, ec);
  fs::permissions(options_.work_root, kTraversable, ec);
  std::string tmpl = (options_.work_root / "eval-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return infra(Error{ErrorCode::kIo, fmt::format("cannot create a work folder under {}",
                                                   options_.work_root.string())});
  }
  const fs::path work(tmpl);
  struct Cleanup {
    fs::path dir;
    bool keep;
    ~Cleanup() {
      if (!keep) {
        std::error_code e;
        fs::remove_all(dir, e);
      }
    }
  } cleanup{work, options_.keep_work_dir};
  if (options_.keep_work_dir) spdlog::warn("keeping the work folder {}", work.string());
  fs::permissions(work, kTraversable, ec);
  const fs::path task_file = work / "task.py";
  const fs::path candidate_file = work / ("candidate" + candidate.extension().string());
  const fs::path ref_dir = work / "ref";
  const fs::path inputs_dir = ref_dir / "inputs";
  const fs::path outputs_dir = ref_dir / "outputs";
  const fs::path cand_dir = work / "cand";
  for (const auto& [path, text] : {std::pair{task_file, std::string_view(task.source)},
                                   std::pair{candidate_file, std::string_view(*source)}}) {
    if (auto s = WriteFile(path, text); !s) return infra(s.error());
    fs::permissions(path, kReadable & ~fs::perms::others_exec & ~fs::perms::group_exec &
                              ~fs::perms::owner_exec, ec);
  }
  for (const auto& dir : {ref_dir, inputs_dir, outputs_dir, cand_dir}) {
    fs::create_directories(dir, ec);
  }
  fs::permissions(ref_dir, kTraversable, ec);
  fs::permissions(inputs_dir, kReadable, ec);
  fs::permissions(outputs_dir, fs::perms::owner_all, ec);  // never readable by the candidate
  const bool drop = ::geteuid() == 0;
  if (drop && ::chown(cand_dir.c_str(), kNobody, kNobody) != 0) {
    return infra(Error{ErrorCode::kIo, "cannot hand the scratch folder to user nobody"});
  }
  fs::permissions(cand_dir, fs::perms::owner_all, ec);

  auto runner_dir = InstallRunner(options_.work_root);
  if (!runner_dir) return infra(runner_dir.error());

  // Step: compile (native) on the pool while the reference runs here.
  std::future<Result<CompileOutcome>> compiled;
  if (*kind == CandidateKind::kNative) compiled = compiler_.Submit(backend, candidate_file);

  // Step: warm-start the candidate's runner (torch import, device context) now, so that its
  // start-up overlaps the compile and the reference; it reads its job once the job file exists.
  // Its wall-clock limit starts when the job is written.
  SandboxPolicy cand_policy;
  cand_policy.scratch_dir = cand_dir;
  cand_policy.visible_paths = {options_.work_root};
  cand_policy.hidden_paths = {outputs_dir};
  ResourceLimits cand_limits;
  if (!backend.UsesAccelerator()) cand_limits.address_space_bytes = options_.memory_limit_bytes;
  cand_limits.processes = options_.process_limit;
  cand_limits.file_size_bytes = 16ull << 30;
  const auto cand_timeout =
      *kind == CandidateKind::kModule ? options_.module_timeout : options_.candidate_timeout;
  const fs::path cand_job_file = work / "candidate-job.json";
  auto cand_deadline = std::make_shared<std::atomic<std::int64_t>>(SteadyNanos(
      Clock::now() + options_.reference_timeout + std::chrono::seconds(300) + cand_timeout));
  std::stop_source cand_stop;
  std::stop_callback forward_stop(stop, [&] { cand_stop.request_stop(); });
  RunnerLaunch cand_launch{.job_file = cand_job_file,
                           .job_json = "",
                           .preload = backend.RunnerDevice(),
                           .deadline = cand_deadline,
                           .timeout = std::chrono::seconds(0)};
  auto cand_future = std::async(std::launch::async, [&] {
    return RunRunner(cand_launch, *runner_dir, cand_dir, cand_policy, cand_limits,
                     cand_stop.get_token());
  });
  // Every early return below stops the waiting runner first.
  struct StopCandidate {
    std::stop_source& source;
    std::future<Result<RunnerRun>>& future;
    ~StopCandidate() {
      if (future.valid()) {
        source.request_stop();
        future.wait();
      }
    }
  } stop_candidate{cand_stop, cand_future};

  // Step: the reference, on fresh secret seeds.
  std::mt19937_64 seeds(options_.seed.value_or(FreshSeed()));
  ReferenceJob ref_job;
  ref_job.task_file = task_file;
  ref_job.task = &task;
  ref_job.device = backend.RunnerDevice();
  ref_job.init_seed = seeds() >> 1;
  // Every trial but the second and fourth keeps the task's own distribution (EVAL-PROTOCOL rule 2).
  for (int k = 0; k < options_.trials; ++k) {
    std::string dist = k == 1 ? "normal" : k == 3 ? "uniform" : "task";
    ref_job.trials.push_back({seeds() >> 1, dist});
  }
  ref_job.tolerance = v.tolerance;
  ref_job.inputs_dir = inputs_dir;
  ref_job.outputs_dir = outputs_dir;
  // The reference is the task's own code: it runs as us (it writes the outputs only we may
  // read), in the sandbox, with ref/ as its one writable folder.
  SandboxPolicy ref_policy;
  ref_policy.scratch_dir = ref_dir;
  ref_policy.drop_privileges = false;
  ref_policy.visible_paths = {options_.work_root};
  ResourceLimits ref_limits;
  if (!backend.UsesAccelerator()) ref_limits.address_space_bytes = options_.memory_limit_bytes;
  RunnerLaunch ref_launch{.job_file = work / "reference-job.json",
                          .job_json = ReferenceJobJson(ref_job),
                          .preload = "",
                          .deadline = nullptr,
                          .timeout = options_.reference_timeout};
  auto ref_run = RunRunner(ref_launch, *runner_dir, ref_dir, ref_policy, ref_limits, stop);
  if (!ref_run) return infra(ref_run.error());
  v.reference_seconds = ref_run->seconds;
  ReferenceResult reference;
  if (ref_run->process.result_text.empty()) {
    ClassifyDeath(ref_run->process, options_.reference_timeout, "reference", v);
    v.status = v.status == EvalStatus::kInfraError ? v.status : EvalStatus::kReferenceError;
    v.message = "the task's reference failed: " + v.message;
    return finish();
  }
  auto parsed_ref = ParseReferenceResult(ref_run->process.result_text, inputs_dir, outputs_dir);
  if (!parsed_ref) return infra(parsed_ref.error());
  reference = std::move(*parsed_ref);
  v.degenerate = reference.degenerate;
  v.environment = reference.environment_json;
  if (reference.status != "ok") {
    v.status = reference.status == "infra_error" ? EvalStatus::kInfraError
                                                 : EvalStatus::kReferenceError;
    v.message = "the task's reference failed (not the candidate's fault); fix the task";
    v.diagnostics = reference.diagnostics;
    return finish();
  }
  // The reference phase ran as us: make its inputs readable and its outputs private.
  for (const auto& e : fs::recursive_directory_iterator(inputs_dir, ec)) {
    fs::permissions(e.path(), e.is_directory() ? kReadable : kReadable & ~fs::perms::others_exec &
                                                                 ~fs::perms::group_exec, ec);
  }
  fs::permissions(outputs_dir, fs::perms::owner_all, ec);

  // Step: the compile's outcome.
  fs::path artifact;
  if (compiled.valid()) {
    auto outcome = compiled.get();
    if (!outcome) return infra(outcome.error());
    v.compile_seconds = outcome->seconds;
    v.compile_cache_hit = outcome->cache_hit;
    if (!outcome->ok) {
      v.status = EvalStatus::kCompileError;
      v.message = outcome->timed_out ? "the compiler timed out" : "the compiler rejected the candidate";
      v.diagnostics = outcome->diagnostics;
      return finish();
    }
    artifact = work / "candidate.so";
    fs::copy_file(outcome->artifact, artifact, fs::copy_options::overwrite_existing, ec);
    if (ec) return infra(Error{ErrorCode::kIo, "cannot copy the compiled candidate: " + ec.message()});
    fs::permissions(artifact, kReadable, ec);
  }

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
  cand_job.init_seed = ref_job.init_seed;
  cand_job.inputs_dir = inputs_dir;
  cand_job.outputs_dir = cand_dir;
  for (const auto& t : reference.trials) cand_job.expected_outputs.push_back(t.outputs);
  // The job appears at once and readable (the runner polls for the name), then the clock starts.
  const fs::path staged_job = work / "candidate-job.staged";
  if (auto written = WriteFile(staged_job, CandidateJobJson(cand_job)); !written) {
    return infra(written.error());
  }
  fs::permissions(staged_job, fs::perms::owner_read | fs::perms::owner_write |
                                  fs::perms::group_read | fs::perms::others_read, ec);
  const auto job_written = Clock::now();
  cand_deadline->store(SteadyNanos(job_written + cand_timeout));
  fs::rename(staged_job, cand_job_file, ec);
  if (ec) return infra(Error{ErrorCode::kIo, "cannot publish the candidate job: " + ec.message()});
  auto cand_run = cand_future.get();
  if (!cand_run) return infra(cand_run.error());
  v.candidate_seconds = SecondsSince(job_written);
  v.isolation = DefaultSandbox()->isolation(cand_policy).Describe();
  if (cand_run->process.result_text.empty()) {
    ClassifyDeath(cand_run->process, cand_timeout, "candidate", v);
    return finish();
  }
  auto result = ParseCandidateResult(cand_run->process.result_text, cand_dir);
  if (!result) {
    v.status = EvalStatus::kRuntimeError;
    v.message = "the candidate's process wrote a malformed result: " + result.error().message;
    return finish();
  }
  v.observed_isolation = result->observed_isolation_json;
  if (result->status != "ok") {
    v.status = StatusFromRunner(result->status);
    v.diagnostics = result->diagnostics;
    v.message = fmt::format("the candidate failed: {}", result->status);
    if (v.status == EvalStatus::kCompileError) v.message = "the device's compiler rejected the candidate";
    return finish();
  }

  // Step: compare every trial's outputs here, against files the candidate never saw.
  if (result->trials.size() != reference.trials.size()) {
    v.status = EvalStatus::kRuntimeError;
    v.message = fmt::format("the candidate ran {} trials of {}", result->trials.size(),
                            reference.trials.size());
    return finish();
  }
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
      for (std::size_t m = 0; m < ref_trial.outputs.size(); ++m) {
        auto cmp = CompareTensors(ref_trial.outputs[m], cand_trial.outputs[m], v.tolerance);
        if (!cmp) return infra(cmp.error());
        tv.max_abs_error = std::max(tv.max_abs_error, cmp->max_abs_error);
        tv.max_rel_error = std::max(tv.max_rel_error, cmp->max_rel_error);
        tv.fraction_bad = std::max(tv.fraction_bad, cmp->fraction_bad);
        if (!cmp->ok) problems.push_back(cmp->problem);
      }
    }
    if (!cand_trial.inputs_unchanged) problems.emplace_back("the candidate modified its inputs");
    if (!problems.empty()) {
      tv.ok = false;
      tv.problem = problems.front();
      all_ok = false;
    }
    v.trials.push_back(std::move(tv));
  }
  if (all_ok) {
    v.status = EvalStatus::kCorrect;
    v.message = fmt::format("matches the reference on {} trials", v.trials.size());
    if (v.degenerate.any()) v.message += " (degenerate task: " + v.degenerate.Describe() + ")";
  } else {
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
  }
  return finish();
}

}  // namespace kforge
