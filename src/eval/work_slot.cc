#include "work_slot.h"

#include <fmt/format.h>
#include <unistd.h>

#include "file_modes.h"
#include "kforge/core/files.h"

namespace kforge {
namespace {

using namespace file_modes;  // NOLINT(google-build-using-namespace): the modes read as words

namespace fs = std::filesystem;

}  // namespace

WarmRunner::WarmRunner(RunnerLaunch launch, fs::path runner_dir, fs::path scratch,
                       SandboxPolicy policy, ResourceLimits limits)
    : launch_(std::move(launch)), policy_(std::move(policy)) {
  future_ = std::async(std::launch::async, [this, runner_dir = std::move(runner_dir),
                                            scratch = std::move(scratch), limits] {
    return RunRunner(launch_, runner_dir, scratch, policy_, limits, stop_.get_token());
  });
}

WarmRunner::~WarmRunner() {
  if (future_.valid()) {
    stop_.request_stop();
    future_.wait();
  }
}

bool WarmRunner::alive() const {
  return future_.valid() && future_.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
}

Result<RunnerRun> WarmRunner::Run(const std::string& job_json, std::chrono::seconds timeout,
                                  std::stop_token stop) {
  if (!alive()) {
    if (future_.valid()) {
      auto early = future_.get();
      return Unavailable(fmt::format("the warm runner ended before its job was ready{}",
                                     early ? ": " + early->process.stderr_text.substr(0, 2000)
                                           : ": " + early.error().message));
    }
    return Internal("WarmRunner::Run called twice");
  }
  std::stop_callback forward(stop, [this] { stop_.request_stop(); });
  const fs::path staged = launch_.job_file.string() + ".staged";
  KFORGE_RETURN_IF_ERROR(WriteFile(staged, job_json));
  std::error_code ec;
  fs::permissions(staged, kReadableFile, ec);
  const auto published = SteadyClock::now();
  launch_.deadline->store(SteadyNanos(published + timeout));
  fs::rename(staged, launch_.job_file, ec);
  if (ec) return IoError("cannot publish the runner's job: " + ec.message());
  auto run = future_.get();
  seconds_since_job_ = std::chrono::duration<double>(SteadyClock::now() - published).count();
  return run;
}

WarmRunner& WorkSlot::candidate() {
  if (!candidate_) StartCandidateRunner();
  return *candidate_;
}

bool WorkSlot::alive() const {
  if (!reference_->alive()) return false;
  if (harness_ != nullptr) return !harness_->ended();
  return candidate_ == nullptr || candidate_->alive();
}

ResourceLimits WorkSlot::CandidateLimits() const {
  ResourceLimits limits;
  if (!config_.uses_accelerator) limits.address_space_bytes = config_.memory_limit_bytes;
  limits.processes = config_.process_limit;
  limits.file_size_bytes = 16ull << 30;
  if (config_.open_files > 0) limits.open_files = config_.open_files;
  return limits;
}

std::shared_ptr<FolderQuota> WorkSlot::CandidateQuota() const {
  if (config_.scratch_quota_bytes == 0) return nullptr;
  auto quota = std::make_shared<FolderQuota>();
  quota->folder = cand_dir();
  quota->max_bytes = config_.scratch_quota_bytes;
  return quota;
}

void WorkSlot::StartCandidateRunner() {
  // The candidate: another user, no network, read-only except its scratch folder, the
  // reference's outputs hidden.
  SandboxPolicy cand_policy;
  cand_policy.scratch_dir = cand_dir();
  cand_policy.visible_paths = {config_.work_root};
  cand_policy.hidden_paths = {outputs_dir()};
  cand_policy.tmp_bytes = config_.tmp_bytes;
  cand_policy.shm_bytes = config_.shm_bytes;
  const auto far = SteadyClock::now() + config_.max_wait;
  candidate_ = std::make_unique<WarmRunner>(
      RunnerLaunch{.job_file = work() / "candidate-job.json",
                   .job_json = "",
                   .preload = config_.device,
                   .deadline = std::make_shared<std::atomic<std::int64_t>>(SteadyNanos(far)),
                   .timeout = std::chrono::seconds(0),
                   .wrapper = {},
                   .sandbox = config_.sandbox,
                   .scratch_quota = CandidateQuota(),
                   .pid = std::make_shared<std::atomic<pid_t>>(0)},
      config_.runner_dir, cand_dir(), cand_policy, CandidateLimits());
}

WorkSlot::WorkSlot(SlotConfig config, fs::path work)
    : config_(std::move(config)), work_(std::move(work)) {}

WorkSlot::~WorkSlot() {
  reference_.reset();
  candidate_.reset();
  if (!config_.keep) {
    std::error_code ec;
    fs::remove_all(work_, ec);
    if (ec) {
      // A candidate that ran as KForge's own user may have taken the permissions off folders in
      // its scratch: give them back, then remove.
      for (auto it = fs::recursive_directory_iterator(
               work_, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code ignored;
        if (it->is_directory(ignored)) fs::permissions(it->path(), fs::perms::owner_all,
                                                       fs::perm_options::add, ignored);
      }
      fs::permissions(cand_dir(), fs::perms::owner_all, fs::perm_options::add, ec);
      fs::remove_all(work_, ec);
    }
  }
}

Result<std::unique_ptr<WorkSlot>> WorkSlot::Prepare(const SlotConfig& config) {
  std::error_code ec;
  fs::create_directories(config.work_root, ec);
  fs::permissions(config.work_root, kTraversable, ec);
  std::string tmpl = (config.work_root / "eval-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return IoError(fmt::format("cannot create a work folder under {}", config.work_root.string()));
  }
  std::unique_ptr<WorkSlot> slot(new WorkSlot(config, fs::path(tmpl)));
  fs::permissions(slot->work(), kTraversable, ec);
  for (const auto& dir : {slot->ref_dir(), slot->inputs_dir(), slot->outputs_dir(),
                          slot->cand_dir(), slot->bin_dir()}) {
    fs::create_directories(dir, ec);
    if (ec) return IoError(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  }
  fs::permissions(slot->ref_dir(), kTraversable, ec);
  fs::permissions(slot->inputs_dir(), kReadable, ec);
  fs::permissions(slot->outputs_dir(), fs::perms::owner_all, ec);
  fs::permissions(slot->bin_dir(), kReadable, ec);
  if (::geteuid() == 0 &&
      ::chown(slot->cand_dir().c_str(), kUnprivilegedUid, kUnprivilegedUid) != 0) {
    return IoError("cannot hand the scratch folder to user nobody");
  }
  fs::permissions(slot->cand_dir(), fs::perms::owner_all, ec);

  const auto far = SteadyClock::now() + config.max_wait;
  // The reference is the task's own code: it runs as KForge's user (it writes the outputs only
  // that user may read), sandboxed, with ref/ as its one writable folder. Its job (the seeds)
  // lies in ref/ too, which no harness sees.
  SandboxPolicy ref_policy;
  ref_policy.scratch_dir = slot->ref_dir();
  ref_policy.drop_privileges = false;
  ref_policy.visible_paths = {config.work_root};
  ResourceLimits ref_limits;
  if (!config.uses_accelerator) ref_limits.address_space_bytes = config.memory_limit_bytes;
  slot->reference_ = std::make_unique<WarmRunner>(
      RunnerLaunch{.job_file = slot->ref_dir() / "reference-job.json",
                   .job_json = "",
                   .preload = config.device,
                   .deadline = std::make_shared<std::atomic<std::int64_t>>(SteadyNanos(far)),
                   .timeout = std::chrono::seconds(0),
                   .wrapper = {},
                   .sandbox = config.sandbox,
                   .scratch_quota = nullptr,
                   .pid = std::make_shared<std::atomic<pid_t>>(0)},
      config.runner_dir, slot->ref_dir(), ref_policy, ref_limits);

  if (!config.warm_candidate) return slot;
  if (config.harness.empty()) {
    slot->StartCandidateRunner();
    return slot;
  }
  // The native harness: another user, no network, read-only except its scratch folder; of the
  // slot it sees only bin/ (the candidate's shared object) and its scratch; ref/ is hidden.
  HarnessLaunch launch;
  launch.argv = {config.harness.string()};
  launch.env = HarnessEnvironment(slot->cand_dir());
  launch.policy.scratch_dir = slot->cand_dir();
  launch.policy.visible_paths = {slot->bin_dir()};
  launch.policy.hidden_paths = {slot->ref_dir()};
  launch.policy.tmp_bytes = config.tmp_bytes;
  launch.policy.shm_bytes = config.shm_bytes;
  launch.limits = slot->CandidateLimits();
  // Outputs cross the arena, not the scratch folder: the candidate's share is the whole quota.
  launch.folder_quota = slot->CandidateQuota();
  launch.max_wait = config.max_wait;
  launch.sandbox = config.sandbox;
  auto harness = HarnessSession::Start(launch);
  if (harness) {
    slot->harness_ = std::move(*harness);
  } else {
    slot->harness_error_ = harness.error().message;
  }
  return slot;
}

void WorkSlot::AllowCandidateOutputs(std::uint64_t bytes) {
  if (FolderQuota* quota = candidate().scratch_quota()) {
    quota->max_bytes = config_.scratch_quota_bytes + bytes;
  }
}

void WorkSlot::SealReference() {
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(inputs_dir(), ec)) {
    fs::permissions(e.path(), e.is_directory() ? kReadable : kReadableFile, ec);
  }
  fs::permissions(outputs_dir(), fs::perms::owner_all, ec);
}

}  // namespace kforge
