// A work slot: one evaluation's private folder, its reference runner and its candidate's process,
// started warm before their jobs exist. Preparing the next slot while the current evaluation runs
// takes Python's and the device's start-up off the next evaluation's clock. Internal to src/eval.
//
// Folder layout (permissions matter: the candidate runs as another user where KForge is root):
//   work/            0711  task.py, candidate.* (the source), the legacy candidate job
//   work/ref/        0711  the reference runner's writable folder and its job (the seeds)
//   work/ref/inputs  0755  inputs and state (read by the parent; by the legacy candidate phase)
//   work/ref/outputs 0700  reference outputs: never readable by, and hidden from, the candidate
//   work/bin/        0755  candidate.so: the one folder of the slot a harness is shown
//   work/cand/       0700  the candidate's scratch folder, owned by the candidate's user
//
// Native candidates run in a harness (SlotConfig::harness, runner/HARNESS.md) that sees only
// work/bin and work/cand: work/ref is hidden from its sandbox (an empty folder), so neither the
// trials' inputs before their turn, nor the outputs, nor the job with the seeds can be read.
// The Python candidate runner (opencl and module candidates, runner/PROTOCOL.md) is started warm
// when the slot has no harness, and on first use otherwise (a KernelBench `.py` on a native
// target).
//
// Thread-safety: a slot is used by one evaluation at a time.
#ifndef KFORGE_SRC_EVAL_WORK_SLOT_H_
#define KFORGE_SRC_EVAL_WORK_SLOT_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <stop_token>
#include <string>

#include "kforge/core/error.h"
#include "kforge/eval/harness_session.h"
#include "runner_process.h"

namespace kforge {

struct SlotConfig {
  std::filesystem::path work_root;
  std::filesystem::path runner_dir;
  std::string device;          // the runners' torch device
  bool uses_accelerator = false;
  std::uint64_t memory_limit_bytes = 0;  // address space of CPU-target runners
  std::uint64_t process_limit = 0;
  // The candidate's limits (EvalOptions says what each is).
  std::uint64_t tmp_bytes = 0;
  std::uint64_t shm_bytes = 0;
  std::uint64_t scratch_quota_bytes = 0;
  std::uint64_t open_files = 0;
  bool keep = false;           // keep the folder after the evaluation
  std::chrono::seconds max_wait{1800};  // how long a warm runner waits for its job
  // The native harness binary (eval/harness_binary.h) for this backend's native candidates;
  // empty: the slot has no harness.
  std::filesystem::path harness;
  // Start the candidate's process warm (the harness, or the Python candidate runner); false: the
  // caller starts its own (the device-time check wraps a fresh harness in a profiler).
  bool warm_candidate = true;
  std::shared_ptr<const Sandbox> sandbox;  // the runners' sandbox; null: DefaultSandbox()

  bool operator==(const SlotConfig&) const = default;
};

// A runner process started before its job exists (runner/PROTOCOL.md, "Warm start").
class WarmRunner {
 public:
  WarmRunner(RunnerLaunch launch, std::filesystem::path runner_dir, std::filesystem::path scratch,
             SandboxPolicy policy, ResourceLimits limits);
  ~WarmRunner();  // kills the process if its job never came
  WarmRunner(const WarmRunner&) = delete;
  WarmRunner& operator=(const WarmRunner&) = delete;

  // False once the process has ended (it may have died while waiting).
  bool alive() const;

  // Publishes the job (readable, by atomic rename), starts the `timeout` clock, waits for the end.
  Result<RunnerRun> Run(const std::string& job_json, std::chrono::seconds timeout,
                        std::stop_token stop);

  // Seconds from publishing the job to the end of the process (after Run).
  double seconds_since_job() const { return seconds_since_job_; }
  const SandboxPolicy& policy() const { return policy_; }
  // The process's pid while it runs, else 0.
  pid_t pid() const { return launch_.pid ? launch_.pid->load() : 0; }
  // The scratch folder's quota (null: none); its limit may be raised before Run().
  FolderQuota* scratch_quota() const { return launch_.scratch_quota.get(); }

 private:
  RunnerLaunch launch_;
  SandboxPolicy policy_;
  std::stop_source stop_;
  std::future<Result<RunnerRun>> future_;
  double seconds_since_job_ = 0;
};

class WorkSlot {
 public:
  // Creates the folder and starts both runners.
  static Result<std::unique_ptr<WorkSlot>> Prepare(const SlotConfig& config);
  ~WorkSlot();

  const SlotConfig& config() const { return config_; }
  const std::filesystem::path& work() const { return work_; }
  std::filesystem::path task_file() const { return work_ / "task.py"; }
  std::filesystem::path ref_dir() const { return work_ / "ref"; }
  std::filesystem::path inputs_dir() const { return work_ / "ref" / "inputs"; }
  std::filesystem::path outputs_dir() const { return work_ / "ref" / "outputs"; }
  std::filesystem::path cand_dir() const { return work_ / "cand"; }
  std::filesystem::path bin_dir() const { return work_ / "bin"; }

  WarmRunner& reference() { return *reference_; }
  // The Python candidate runner (started now if it was not started warm).
  WarmRunner& candidate();
  // The Python candidate runner's pid while it runs; 0 when it was not started or has ended.
  pid_t candidate_pid() const { return candidate_ ? candidate_->pid() : 0; }
  // The harness session, started warm (null when the slot has none, or it could not start:
  // harness_error() says why). The evaluation takes it over; a slot's harness serves one
  // evaluation.
  std::unique_ptr<HarnessSession> TakeHarness() { return std::move(harness_); }
  const std::string& harness_error() const { return harness_error_; }
  bool alive() const;

  // Makes the reference's inputs readable by the candidate and its outputs private again (the
  // reference runs as KForge's user with the usual umask).
  void SealReference();

  // Raises the candidate's scratch quota by `bytes`: the runner writes its outputs there, which
  // must not count against the candidate's own share (SlotConfig::scratch_quota_bytes).
  void AllowCandidateOutputs(std::uint64_t bytes);

 private:
  WorkSlot(SlotConfig config, std::filesystem::path work);

  SlotConfig config_;
  std::filesystem::path work_;
  // The candidate runner's launch, kept for a start on first use.
  void StartCandidateRunner();
  // The candidate's process limits and scratch quota (its runner's or its harness's).
  ResourceLimits CandidateLimits() const;
  std::shared_ptr<FolderQuota> CandidateQuota() const;

  std::unique_ptr<WarmRunner> reference_;
  std::unique_ptr<WarmRunner> candidate_;
  std::unique_ptr<HarnessSession> harness_;
  std::string harness_error_;
};

}  // namespace kforge

#endif  // KFORGE_SRC_EVAL_WORK_SLOT_H_
