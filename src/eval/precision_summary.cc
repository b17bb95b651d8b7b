#include "kforge/eval/precision_summary.h"

#include <algorithm>

namespace kforge {

void SummariseTrial(const std::vector<OutputJudgement>& outputs, TrialVerdict& trial) {
  bool any_tolerance = false, any_truth = false, all_strict = true;
  for (const auto& o : outputs) {
    trial.max_abs_error = std::max(trial.max_abs_error, o.max_abs_error);
    trial.max_rel_error = std::max(trial.max_rel_error, o.max_rel_error);
    trial.fraction_bad = std::max(trial.fraction_bad, o.fraction_bad);
    any_tolerance |= o.rule == AccuracyRule::kTolerance;
    any_truth |= o.rule == AccuracyRule::kTruth;
    all_strict &= o.meets_strict;
    if (o.error_ratio && (!trial.error_ratio || *o.error_ratio > *trial.error_ratio)) {
      trial.error_ratio = o.error_ratio;
      trial.reference_error = o.reference_error;
    }
  }
  trial.rule = any_tolerance ? "tolerance" : any_truth ? "truth" : "exact";
  trial.meets_strict = all_strict;
}

PrecisionOutcome SummarisePrecision(const std::vector<TrialVerdict>& trials,
                                    PrecisionPolicy policy, const TruthStatus& truth,
                                    bool correct) {
  PrecisionOutcome p;
  bool any_tolerance = false, any_truth = false, all_strict = !trials.empty();
  for (const auto& t : trials) {
    any_tolerance |= t.rule == "tolerance";
    any_truth |= t.rule == "truth";
    all_strict &= t.meets_strict;
    if (t.error_ratio && (!p.worst_error_ratio || *t.error_ratio > *p.worst_error_ratio)) {
      p.worst_error_ratio = t.error_ratio;
    }
  }
  p.rule = any_tolerance ? "tolerance" : any_truth ? "truth" : trials.empty() ? "" : "exact";
  if (any_tolerance) {
    p.fallback_reason =
        !truth.requested ? "the evaluation did not ask for a float64 truth"
        : !truth.available
            ? (truth.reason.empty() ? "the model did not run in float64" : truth.reason)
            : "the model's float64 run returned some outputs in another dtype (it casts them), so "
              "those were judged by the tolerance rule";
  }
  if (correct) p.achieved = all_strict ? "strict" : std::string(PrecisionPolicyName(policy));
  return p;
}

}  // namespace kforge
