// The runner protocol (runner/PROTOCOL.md) on the orchestrator's side: jobs are built and results
// parsed into typed structs here, and nowhere else. Internal to src/eval.
#ifndef KFORGE_SRC_EVAL_RUNNER_PROTOCOL_H_
#define KFORGE_SRC_EVAL_RUNNER_PROTOCOL_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/eval/tensor_compare.h"
#include "kforge/eval/timing.h"
#include "kforge/eval/trial_plan.h"
#include "kforge/eval/verdict.h"
#include "kforge/task/task.h"

namespace kforge {

inline constexpr int kRunnerProtocolVersion = 1;

struct ReferenceJob {
  std::filesystem::path task_file;
  const Task* task = nullptr;
  std::string device;
  std::uint64_t init_seed = 0;
  std::vector<PlannedTrial> trials;  // eval/trial_plan.h
  Tolerance tolerance;
  bool truth = false;  // float64 truth files beside every trial's outputs
  PrecisionPolicy policy = PrecisionPolicy::kStrict;  // TF32 in the baselines under tf32/mixed
  std::filesystem::path inputs_dir;
  std::filesystem::path outputs_dir;
  std::optional<TimingOptions> timing;  // the eager baseline is timed when set
  std::vector<std::string> baselines;   // with timing: compile, compile-max-autotune
};

struct CandidateJob {
  std::filesystem::path task_file;
  const Task* task = nullptr;
  std::string device;
  std::string kind;                   // native, opencl, module
  std::string backend;                // runner backend name (for messages)
  std::string stream_handle;          // native: what kforge_forward's stream is (StreamHandleName)
  std::filesystem::path artifact;     // native
  std::filesystem::path source_file;  // opencl, module
  std::string opencl_platform;
  std::uint64_t init_seed = 0;
  std::filesystem::path inputs_dir;
  std::filesystem::path outputs_dir;
  std::vector<std::vector<TensorFile>> expected_outputs;  // per trial: shapes and dtypes
  std::optional<TimingOptions> timing;  // the call is timed after the trials when set
};

// A result's `timing` field: statistics, or why there are none.
struct TimingOutcome {
  std::optional<TimingStats> stats;
  std::string error;  // set when the field is absent from a timed job, an error or malformed
};

struct ReferenceTrial {
  int index = 0;
  std::string distribution;
  std::vector<TensorFile> inputs;
  std::vector<TensorFile> outputs;
  // Per output, its float64 truth file; nullopt where the output has none (integer outputs, an
  // output the float64 run did not return in float64, no truth at all). Empty without a truth.
  std::vector<std::optional<TensorFile>> truth;
  std::string notes;
};


struct ReferenceResult {
  std::string status;  // ok, reference_error, infra_error
  std::string diagnostics;
  std::vector<ReferenceTrial> trials;
  // The reference Model's state_dict tensors, in order (inputs_dir/state): native candidates get
  // them after the task inputs.
  std::vector<TensorFile> state;
  std::vector<ReferenceTrial> timing_sets;  // purpose "timing": files under timing_J
  std::vector<SkippedTrial> skipped;  // planned trials (not timing sets) it did not write
  bool truth_requested = false;  // the job asked for a truth and the runner answered about it
  bool truth_available = false;  // the model ran in float64 on every trial
  std::string truth_reason;      // why not
  DegenerateFlags degenerate;
  std::string environment_json;
  TimingOutcome timing;                               // the eager baseline
  std::map<std::string, TimingOutcome> baselines;     // the requested compile baselines
  std::map<std::string, std::string> baselines_json;  // the same, as the runner wrote them
  std::optional<CallWork> work;                       // with timing
  std::string steps_json;  // the runner's step times (JSON object of numbers), or ""
};

struct CandidateTrial {
  int index = 0;
  std::vector<TensorFile> outputs;
  bool inputs_unchanged = true;
  std::vector<std::string> problems;
};

struct CandidateResult {
  std::string status;  // ok, compile_error, runtime_error, sandbox_violation, ...
  std::string diagnostics;
  std::vector<CandidateTrial> trials;
  // Dynamic guardrail findings ("[check-id] what was seen"), runner/kforge_runner/tamper_guard.py.
  std::vector<std::string> tampering;
  // The address probe: trial `index`'s inputs run in the buffers trial 0's had just used.
  std::optional<CandidateTrial> address_probe;
  std::string observed_isolation_json;
  std::string environment_json;
  TimingOutcome timing;
  std::string steps_json;  // the runner's step times (JSON object of numbers), or ""
};

// The result seal (runner/PROTOCOL.md "Result seal"): `text` must be exactly one line, a JSON
// object whose "seal" is `seal`. Returns the document without the seal, or why it was refused
// (something else wrote on the result channel: a forged or an extra document).
Result<std::string> UnsealResult(std::string_view text, std::string_view seal);

// The `timing` field of a result document as JSON text (absent: "" gives an error that says so).
TimingOutcome ParseTimingField(std::string_view json_text);

std::string ReferenceJobJson(const ReferenceJob& job);
std::string CandidateJobJson(const CandidateJob& job);

// The `profile` phase's job (runner/PROTOCOL.md, "Phase profile"): a candidate job whose runner
// runs one warm-up call and then `calls` profiled calls under `tool`, writing its exports to
// `output_dir`.
struct ProfileJob {
  CandidateJob candidate;      // its `timing` is ignored: the profile pass is untimed
  std::string tool = "torch";  // torch, opencl, or external (a wrapping profiler)
  int calls = 3;
  std::filesystem::path output_dir;  // inside the candidate's scratch folder
};
std::string ProfileJobJson(const ProfileJob& job);

// The `profile` phase's result: the runner's status ("ok", "runtime_error", ...; "malformed_result"
// when the text is no result object) and diagnostics.
struct ProfileResult {
  std::string status;
  std::string diagnostics;
};
ProfileResult ParseProfileResult(std::string_view text);

// Parse a result document; file names in manifest entries are resolved against `dir`. A candidate's
// output files must be plain files inside `outputs_dir` (no absolute paths, `..` or symbolic
// links out of it): a result naming any other file is refused.
Result<ReferenceResult> ParseReferenceResult(std::string_view text,
                                             const std::filesystem::path& inputs_dir,
                                             const std::filesystem::path& outputs_dir);
Result<CandidateResult> ParseCandidateResult(std::string_view text,
                                             const std::filesystem::path& outputs_dir);

}  // namespace kforge

#endif  // KFORGE_SRC_EVAL_RUNNER_PROTOCOL_H_
