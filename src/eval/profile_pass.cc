#include "kforge/eval/profile_pass.h"

#include <fmt/format.h>
#include <unistd.h>

#include <random>

#include "file_modes.h"
#include "kforge/core/files.h"
#include "runner_process.h"
#include "runner_protocol.h"
#include "work_slot.h"

namespace kforge {
namespace {

using namespace file_modes;  // NOLINT(google-build-using-namespace): the modes read as words
namespace fs = std::filesystem;

std::string Tail(const std::string& text, std::size_t max_bytes = 4000) {
  return text.size() <= max_bytes ? text : text.substr(text.size() - max_bytes);
}

}  // namespace

Result<ProfilePassResult> RunProfilePass(CompileService& compiler, const EvalOptions& options,
                                         const Task& task, const Backend& backend,
                                         const fs::path& candidate,
                                         const ProfilePassRequest& request, std::stop_token stop) {
  ProfilePassResult out;
  const fs::path work_root = options.work_root.empty() ? DefaultWorkRoot() : options.work_root;
  auto runner_dir = InstallRunner(work_root);
  if (!runner_dir) return std::unexpected(runner_dir.error());
  SlotConfig config{.work_root = work_root,
                    .runner_dir = *runner_dir,
                    .device = backend.RunnerDevice(),
                    .uses_accelerator = backend.UsesAccelerator(),
                    .memory_limit_bytes = options.memory_limit_bytes,
                    .process_limit = options.process_limit,
                    .keep = options.keep_work_dir,
                    .max_wait = std::chrono::seconds(1800),
                    .harness = {},
                    .warm_candidate = true,  // profiled in the Python runner's profile phase
                    .sandbox = options.sandbox};
  auto slot = WorkSlot::Prepare(config);
  if (!slot) return std::unexpected(slot.error());
  WorkSlot& s = **slot;

  // The candidate file (or the reference Model under the module kind's name).
  std::string kind_name;
  std::string source;
  fs::path candidate_file;
  if (request.reference) {
    kind_name = "module";
    source = task.source + "\n\nModelNew = Model  # kforge profile --reference\n";
    candidate_file = s.work() / "candidate_reference.py";
  } else {
    auto kind = backend.KindOf(candidate);
    if (!kind) return std::unexpected(kind.error());
    kind_name = std::string(CandidateKindName(*kind));
    auto text = ReadFile(candidate);
    if (!text) return std::unexpected(text.error());
    source = std::move(*text);
    candidate_file = s.work() / ("candidate" + candidate.extension().string());
  }
  std::error_code ec;
  for (const auto& [path, text] : {std::pair{s.task_file(), std::string_view(task.source)},
                                   std::pair{candidate_file, std::string_view(source)}}) {
    KFORGE_RETURN_IF_ERROR(WriteFile(path, text));
    fs::permissions(path, kReadableFile, ec);
  }
  std::future<Result<CompileOutcome>> compiled;
  if (kind_name == "native") compiled = compiler.Submit(backend, candidate_file);

  // The reference phase: one trial of the task's own inputs.
  std::mt19937_64 seeds(options.seed.value_or(std::random_device{}()));
  ReferenceJob ref_job;
  ref_job.task_file = s.task_file();
  ref_job.task = &task;
  ref_job.device = backend.RunnerDevice();
  ref_job.init_seed = seeds() >> 1;
  ref_job.trials.push_back({seeds() >> 1, "task"});
  ref_job.tolerance = ToleranceOf(options.policy.value_or(task.policy));
  ref_job.inputs_dir = s.inputs_dir();
  ref_job.outputs_dir = s.outputs_dir();
  auto ref_run = s.reference().Run(ReferenceJobJson(ref_job), options.reference_timeout, stop);
  if (!ref_run) return std::unexpected(ref_run.error());
  if (ref_run->process.result_text.empty()) {
    return Internal("the task's reference phase died without a result: " +
                    Tail(ref_run->process.stderr_text, 1500));
  }
  auto reference = ParseReferenceResult(ref_run->process.result_text, s.inputs_dir(), s.outputs_dir());
  if (!reference) return std::unexpected(reference.error());
  if (reference->status != "ok") {
    return InvalidArgument("the task's reference failed, so there is nothing to profile: " +
                           reference->diagnostics);
  }
  s.SealReference();

  fs::path artifact;
  if (compiled.valid()) {
    auto outcome = compiled.get();
    if (!outcome) return std::unexpected(outcome.error());
    if (!outcome->ok) {
      out.status = "compile_error";
      out.diagnostics = outcome->diagnostics;
      return out;
    }
    artifact = s.work() / "candidate.so";
    fs::copy_file(outcome->artifact, artifact, fs::copy_options::overwrite_existing, ec);
    if (ec) return IoError("cannot copy the compiled candidate: " + ec.message());
    fs::permissions(artifact, kReadable, ec);
  }

  // The profile job: the candidate's job with the runner's profile request.
  ProfileJob profile_job;
  CandidateJob& cand_job = profile_job.candidate;
  cand_job.task_file = s.task_file();
  cand_job.task = &task;
  cand_job.device = backend.RunnerDevice();
  cand_job.kind = kind_name;
  const bool compat = kind_name == "module" && backend.traits().kernelbench_compat;
  cand_job.backend = compat || request.reference ? "kernelbench" : backend.RunnerBackendName();
  cand_job.artifact = artifact;
  if (kind_name != "native") cand_job.source_file = candidate_file;
  cand_job.opencl_platform = backend.OpenClPlatform();
  cand_job.stream_handle = std::string(StreamHandleName(backend.traits().stream));
  cand_job.init_seed = ref_job.init_seed;
  cand_job.inputs_dir = s.inputs_dir();
  cand_job.outputs_dir = s.cand_dir();
  for (const auto& t : reference->trials) cand_job.expected_outputs.push_back(t.outputs);
  const fs::path profile_dir = s.cand_dir() / "profile";
  profile_job.tool = request.runner_tool;
  profile_job.calls = request.calls;
  profile_job.output_dir = profile_dir;

  // A fresh runner (not a warm one): the wrapper must start it.
  SandboxPolicy policy;
  policy.scratch_dir = s.cand_dir();
  policy.visible_paths = {config.work_root};
  policy.hidden_paths = {s.outputs_dir()};
  policy.drop_privileges = !request.keep_privileges;
  if (request.keep_privileges && ::geteuid() == 0) {
    // The profiler runs as root: its scratch folder is root's.
    [[maybe_unused]] const int rc = ::chown(s.cand_dir().c_str(), 0, 0);
  }
  ResourceLimits limits;
  if (!config.uses_accelerator) limits.address_space_bytes = config.memory_limit_bytes;
  limits.processes = config.process_limit;
  limits.file_size_bytes = 16ull << 30;
  RunnerLaunch launch{
      .job_file = s.work() / "profile-job.json",
      .job_json = ProfileJobJson(profile_job),
      .preload = "",
      .deadline = nullptr,
      .timeout = request.timeout,
      .wrapper = request.wrapper ? request.wrapper(profile_dir) : std::vector<std::string>{},
      .sandbox = options.sandbox,
      .scratch_quota = nullptr,
      .pid = nullptr};
  fs::create_directories(profile_dir, ec);
  if (::geteuid() == 0 && !request.keep_privileges) {
    [[maybe_unused]] const int rc =
        ::chown(profile_dir.c_str(), kUnprivilegedUid, kUnprivilegedUid);
  }
  auto run = RunRunner(launch, config.runner_dir, s.cand_dir(), policy, limits, stop);
  if (!run) return std::unexpected(run.error());
  out.log = Tail(run->process.stderr_text);
  if (run->process.result_text.empty()) {
    out.status = run->process.state == ProcessState::kTimedOut
                     ? "timeout"
                     : fmt::format("died (exit code {}, signal {})", run->process.exit_code,
                                   run->process.term_signal);
  } else {
    const ProfileResult result = ParseProfileResult(run->process.result_text);
    out.status = result.status;
    out.diagnostics = result.diagnostics;
  }
  // Whatever the profiled process and the wrapper wrote comes out, even after a failure.
  fs::create_directories(request.output_dir, ec);
  if (ec) return IoError(fmt::format("cannot create {}: {}", request.output_dir.string(), ec.message()));
  for (const auto& e : fs::directory_iterator(profile_dir, ec)) {
    if (!e.is_regular_file()) continue;
    const fs::path to = request.output_dir / e.path().filename();
    fs::copy_file(e.path(), to, fs::copy_options::overwrite_existing, ec);
    if (!ec) out.files.push_back(to);
  }
  return out;
}

}  // namespace kforge
