// Evaluator: one candidate of one task on one target, judged by EVAL-PROTOCOL's rules, as a
// script of named steps (docs/ARCHITECTURE.md "One evaluation, step by step"): guardrails ->
// slot -> compile -> reference -> trials -> address probe -> compare -> timing -> judge.
//
// Native candidates (cpp, cuda, hip, sycl) run in kforge-harness (runner/HARNESS.md), driven
// from here: each trial's inputs reach the harness's arena only at that trial's turn, its outputs
// are copied out while the harness is frozen, and timing is parent-driven (timed calls are
// checked calls; the parent's clock bounds the child's claims). opencl and module candidates run
// in the Python runner's candidate phase (runner/PROTOCOL.md). The reference runs first, in its
// own process, on fresh secret seeds (std::random_device for every evaluation unless
// EvalOptions::seed pins them); its folder is never visible to a harness.
//
// Thread-safety: Evaluate() may be called from several threads; each call owns its work folder.
#ifndef KFORGE_EVAL_EVALUATOR_H_
#define KFORGE_EVAL_EVALUATOR_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>

#include "kforge/core/sandbox.h"
#include "kforge/eval/compile_service.h"
#include "kforge/eval/timing.h"
#include "kforge/eval/verdict.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge {

struct EvalOptions {
  int trials = 5;  // of the task's own distributions; at least 2: one uses a second distribution
  // The shortcut-finding trials after them (eval/trial_plan.h): scaled, negative, dominant,
  // sorted, ties, shape.
  bool shortcut_trials = true;
  // Input sets drawn for timing only (eval/trial_plan.h), written beside the trials.
  int timing_sets = 0;
  // Judge outputs against the float64 truth (eval/accuracy.h); off: the tolerance rule.
  bool truth = true;
  std::chrono::seconds reference_timeout{600};    // the reference phase, wall clock
  std::chrono::seconds candidate_timeout{120};    // the candidate phase of native/OpenCL
  std::chrono::seconds module_timeout{600};       // Python modules (load_inline compiles)
  std::uint64_t memory_limit_bytes = 8ull << 30;  // address space of CPU-target runners
  std::uint64_t process_limit = 1024;             // processes + threads of the runner's user
  // The candidate's private /tmp and /dev/shm (size-limited tmpfs mounts: a write past the size
  // fails with ENOSPC, resource_limit), what its scratch folder may hold besides the outputs the
  // runner writes there (more: KForge stops it, resource_limit), and its open descriptors.
  std::uint64_t tmp_bytes = 1ull << 30;
  std::uint64_t shm_bytes = 1ull << 30;
  std::uint64_t scratch_quota_bytes = 1ull << 30;
  std::uint64_t open_files = 4096;
  std::optional<PrecisionPolicy> policy;          // overrides the task's policy
  std::optional<std::uint64_t> seed;              // reproduce a run; default: fresh, secret
  std::filesystem::path work_root;                // default: $TMPDIR/kforge-<uid>
  bool keep_work_dir = false;                     // keep the folder for debugging
  // After each evaluation, prepare the next one's folder and warm runners (Python, torch and the
  // device context start while nothing waits for them). For callers that evaluate many
  // candidates in a row; costs two idle processes (and their device contexts) in between.
  bool prepare_next = false;
  // How many slots warm ahead on accelerator targets, whose runners take seconds to start (torch
  // import and a device context); CPU targets keep one, since warming competes for the cores.
  int prepare_depth = 2;
  // Static guardrails (src/eval/guardrails.h) before anything compiles: a reject ends the
  // evaluation with status `guardrail`, flags go into the verdict. Default on; off only to test
  // what the sandbox does with candidates the guardrails would stop.
  bool static_guardrails = true;
  // The target lets candidates call the reference framework's compute ops in the forward path.
  bool allow_reference_ops = false;
  // Time the call after the correctness trials (runner/PROTOCOL.md "Timing"), and the reference
  // Model's forward as the PyTorch eager baseline in the same run. The verdict keeps the
  // candidate's timing only when it is correct; timing failures never change the status.
  bool time = false;
  TimingOptions timing;  // when sampling stops (EVAL-PROTOCOL's rule by default)
  // With `time`: torch.compile baselines to time besides eager ("compile",
  // "compile-max-autotune"), cached per task, target and library versions.
  std::vector<std::string> baselines;
  // Native candidates run in kforge-harness (runner/HARNESS.md). Off (or KFORGE_NATIVE_HARNESS=0
  // in the environment): in the Python runner's candidate phase, as opencl and module
  // candidates do (for measuring one against the other).
  bool native_harness = true;
  // With `time`: a device without a calibration for the runner's environment is calibrated
  // first (once; eval/calibration.h), so the physics floor always applies. Off: only a stored
  // calibration is used.
  bool calibrate = true;
  // The sandbox every runner starts in (core/sandbox.h); null (the default): DefaultSandbox(),
  // bubblewrap where it works here. Tests pass their own.
  std::shared_ptr<const Sandbox> sandbox;
};

// $TMPDIR/kforge-<uid>: where evaluation folders go unless EvalOptions::work_root says otherwise.
std::filesystem::path DefaultWorkRoot();

class WorkSlot;
struct SlotConfig;
struct ReferenceResult;
class BaselineCache;
struct Calibration;

class Evaluator {
 public:
  Evaluator(CompileService& compiler, EvalOptions options);
  ~Evaluator();

  // Always returns a verdict; failures of the candidate, the task or KForge itself are statuses.
  Verdict Evaluate(const Task& task, const Backend& backend, const std::filesystem::path& candidate,
                   std::stop_token stop = {});

  // Whether Evaluate() prepares the next slot (EvalOptions::prepare_next); a caller turns it off
  // before its last evaluation.
  void set_prepare_next(bool prepare) { options_.prepare_next = prepare; }

 private:
  // The slot settings for `backend`'s device.
  Result<SlotConfig> ConfigFor(const Backend& backend);
  // A prepared slot for `backend`'s device, or a fresh one.
  Result<std::unique_ptr<WorkSlot>> TakeSlot(const Backend& backend);
  // With prepare_next: starts slots until enough are warming for the next evaluations.
  void TopUpPreparedSlots(const Backend& backend);

  void TakeBaselines(const Task& task, Verdict& v, const ReferenceResult& reference,
                     const std::string& runner_key, const std::optional<std::string>& last_env,
                     const std::map<std::string, std::string>& cached, BaselineCache& cache);
  // The calibration of the device the environment names, for that environment: stored, or
  // measured now on `backend`'s device (EvalOptions::calibrate); null when there is none.
  const Calibration* CalibrationFor(const Backend& backend, const std::string& environment_json);

  // The steps of one Evaluate() call (evaluator.cc).
  struct Steps;

  CompileService& compiler_;
  EvalOptions options_;
  std::mutex mu_;
  std::mutex calibration_mu_;  // held while a calibration is looked up or measured
  std::map<std::string, std::unique_ptr<Calibration>> calibrations_;  // guarded by calibration_mu_
  std::deque<std::unique_ptr<WorkSlot>> prepared_;  // guarded by mu_; oldest first
};

}  // namespace kforge

#endif  // KFORGE_EVAL_EVALUATOR_H_
