// The verdict of one evaluation: a status that is stored and shown, and the evidence behind it.
#ifndef KFORGE_EVAL_VERDICT_H_
#define KFORGE_EVAL_VERDICT_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/core/load_monitor.h"
#include "kforge/eval/timing.h"
#include "kforge/store/records.h"
#include "kforge/task/task.h"

namespace kforge {

// The status of an evaluation is the run store's stored enum (one list, one set of names).
using EvalStatus = store::EvaluationStatus;
inline std::string_view EvalStatusName(EvalStatus status) { return store::ToString(status); }
inline Result<EvalStatus> ParseEvalStatus(std::string_view name) {
  return store::ParseEvaluationStatus(name);
}

// The version of the verdict document ToJson writes; FromJson and the reports read every version
// up to it (docs/verdict.md "Versions").
inline constexpr int kVerdictVersion = 2;

struct TrialVerdict {
  int index = 0;
  // task, normal, uniform (the task's own), scaled, negative, dominant, sorted, ties, shape
  // (shortcut-finding trials: eval/trial_plan.h)
  std::string distribution;
  bool ok = false;
  // Over the trial's outputs, the largest (eval/accuracy.h): against the float64 truth where the
  // output had one, against the reference otherwise.
  double max_abs_error = 0;
  double max_rel_error = 0;
  double fraction_bad = 0;
  bool inputs_unchanged = true;
  std::string problem;  // why not ok, one line
  // Verdict version 2: the rule that judged the trial ("truth" when every floating output had its
  // truth, else "tolerance"; "exact" when every output is an integer one; "" in version 1), the
  // largest error ratio and the reference's own error at that output (truth rule only), and
  // whether every output also met strict.
  std::string rule;
  std::optional<double> error_ratio;
  std::optional<double> reference_error;
  bool meets_strict = false;
};

// A planned trial the reference did not write (it does not apply to the task, or the reference is
// not well defined on it): reported, never failed.
struct SkippedTrial {
  std::string distribution;
  std::string reason;
};

// How the precision contract judged the evaluation (verdict version 2; eval/accuracy.h).
struct PrecisionOutcome {
  // "truth" when every floating output of every trial was judged against its float64 truth,
  // "tolerance" when any fell back to the tolerance rule (then `fallback_reason` says why), "exact"
  // when the task has integer outputs only; "" for a version-1 verdict.
  std::string rule;
  std::string fallback_reason;
  std::optional<double> worst_error_ratio;  // over every trial (truth rule)
  // The precision the candidate's outputs met, for a correct candidate: "strict" when every
  // output met strict whatever the policy, else the policy's name ("tf32", "mixed": a precision
  // speedup, reported apart). "" when not correct, or in a version-1 verdict.
  std::string achieved;
};

// EVAL-PROTOCOL correctness rule 4: a task whose reference cannot tell right from wrong.
struct DegenerateFlags {
  bool all_zero = false;
  bool mostly_zero = false;  // at least 99 % of the output elements are exactly zero
  bool constant = false;
  bool constant_passes = false;
  bool nondeterministic = false;
  // One line per rule that fired, naming the outputs ("constant: output 0 is the same value in
  // every trial"); empty in verdicts before version 2.
  std::vector<std::string> reasons;
  bool any() const {
    return all_zero || mostly_zero || constant || constant_passes || nondeterministic;
  }
  std::string Describe() const;  // "all-zero output, nondeterministic reference" or ""
};

struct Verdict {
  EvalStatus status = EvalStatus::kInfraError;
  std::string message;      // what happened, for a person and for the next LLM prompt
  std::string diagnostics;  // trimmed compiler / runtime output
  std::string task_name;
  std::string task_origin;
  std::string target;
  // The runner's device string the evaluation ran on ("cuda:1" when a bench placed it on the
  // second GPU); empty for a verdict stored before this field existed.
  std::string device;
  std::string candidate;       // path as given
  std::string candidate_kind;  // native, opencl, module
  std::string mode;            // "kforge" or "kernelbench-compat"
  PrecisionPolicy policy = PrecisionPolicy::kStrict;
  Tolerance tolerance;
  std::vector<TrialVerdict> trials;
  std::vector<SkippedTrial> skipped_trials;
  PrecisionOutcome precision;
  DegenerateFlags degenerate;
  // Static guardrail findings that did not reject the candidate, one line each ("line 12:
  // [hardcoded-shape] ..."); a rejected candidate's findings are in `diagnostics`.
  std::vector<std::string> guardrail_flags;
  bool compile_cache_hit = false;
  double compile_seconds = 0;
  double reference_seconds = 0;
  double candidate_seconds = 0;
  double total_seconds = 0;
  // Where the time went (diagnostic only; docs/verdict.md "seconds.steps"): the orchestrator's
  // steps in order, and each runner's own step times as the runner reported them (JSON object
  // text, empty when the phase did not report).
  std::vector<std::pair<std::string, double>> steps;
  std::string reference_steps;
  std::string candidate_steps;
  std::string isolation;           // what the sandbox provided (Isolation::Describe)
  std::string observed_isolation;  // what the runner saw from inside, as JSON text
  std::string environment;         // runner environment as JSON text
  // Timing (EvalOptions::time; runner/PROTOCOL.md "Timing"): the candidate's call, kept only for
  // a correct candidate, and the reference Model's forward (PyTorch eager) timed the same way on
  // the same device in the same run. An `*_error` says why a requested timing is missing.
  std::optional<TimingStats> timing;
  std::string timing_error;
  std::optional<TimingStats> eager_baseline;
  std::string eager_baseline_error;
  // eager baseline median / candidate median, when both are present and positive.
  std::optional<double> speedup_vs_eager;
  // torch.compile baselines (EvalOptions::baselines): timed by the same code, on the same device,
  // in the same run or taken from the cache for this task, device and library versions.
  std::optional<TimingStats> compile_baseline;  // mode default
  std::string compile_baseline_error;
  bool compile_baseline_cached = false;
  std::optional<TimingStats> compile_max_autotune_baseline;
  std::string compile_max_autotune_baseline_error;
  bool compile_max_autotune_baseline_cached = false;
  std::optional<double> speedup_vs_compile;        // vs the faster of the compile modes timed
  std::optional<double> speedup_vs_best_baseline;  // vs the fastest of eager and compile
  // The physics floor (with a calibration of the device, `kforge calibrate`): the reference's
  // work of one call, the floor it implies and floor / candidate median.
  std::optional<CallWork> work;
  std::optional<PhysicsFloor> floor;
  std::optional<double> sol_fraction;
  // A correct candidate whose timing needs a person's look: a speedup over 10x against the
  // faster baseline, or work that the timing events did not see (side streams). Its status stays
  // correct; reports keep it apart.
  bool held_for_review = false;
  std::string review_reason;
  // The out-of-process device-time check (eval/device_time_check.h, DeviceTimeCheck::ToJson)
  // of a result that was promoted (reported, exported); empty when it was not run.
  std::string device_time_check_json;
  // Load while the timed phases ran (core/load_monitor.h): the reference's (eager and compile
  // baselines) and the candidate's. `timed_under_load` when either was busy: the figures stand,
  // flagged, with `load_reasons` saying what competed; a bench times such an evaluation once more
  // (`retimed` counts it).
  std::optional<LoadReading> reference_load;
  std::optional<LoadReading> candidate_load;
  bool timed_under_load = false;
  std::vector<std::string> load_reasons;
  int retimed = 0;

  std::string ToJson() const;  // one JSON object (kVerdictVersion), documented in docs/verdict.md
  std::string ToText() const;  // a few readable lines for the terminal
  // A stored verdict of any version up to kVerdictVersion read back (the inverse of ToJson for
  // what the synthesis loop, its prompts and the summaries read: status, message, diagnostics,
  // task, target, candidate, precision and its outcome, trials, skipped trials, seconds,
  // degenerate flags, every timing and baseline with its error, the speedups, the speed-of-light
  // fraction and the review hold); fields a version lacks keep their defaults. Work, floor,
  // steps, isolation and environment stay in the JSON. An unreadable document gives an
  // infra_error verdict that says so.
  static Verdict FromJson(const std::string& text);
};

// The selection rule of the synthesis loop: true when `challenger` should replace `incumbent` as
// the best candidate. A correct verdict beats one that is not; between two correct verdicts that
// both carry timing, the lower candidate median wins. Everything else (equal medians, a missing
// timing, two verdicts that are not correct) keeps the incumbent, the earlier one.
bool IsBetter(const Verdict& challenger, const Verdict& incumbent);

}  // namespace kforge

#endif  // KFORGE_EVAL_VERDICT_H_
