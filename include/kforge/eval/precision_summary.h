// From output judgements (eval/accuracy.h) to what a verdict says about precision: each trial's
// figures and the evaluation's PrecisionOutcome (verdict version 2, docs/verdict.md "Precision").
#ifndef KFORGE_EVAL_PRECISION_SUMMARY_H_
#define KFORGE_EVAL_PRECISION_SUMMARY_H_

#include <string>
#include <vector>

#include "kforge/eval/accuracy.h"
#include "kforge/eval/verdict.h"

namespace kforge {

// Folds one trial's output judgements into `trial`: the largest errors and fraction bad, the
// rule ("truth" when every floating output had its truth, "exact" when all outputs are integer,
// else "tolerance"), the largest error ratio with the reference's own error at that output, and
// whether every output met strict. Leaves `ok` and `problem` to the caller.
void SummariseTrial(const std::vector<OutputJudgement>& outputs, TrialVerdict& trial);

// What the reference phase said about the float64 truth.
struct TruthStatus {
  bool requested = false;
  bool available = false;
  std::string reason;  // why it is not available
};

// The evaluation's precision outcome from its judged trials; `correct` says whether every trial
// passed (only then is `achieved` set).
PrecisionOutcome SummarisePrecision(const std::vector<TrialVerdict>& trials,
                                    PrecisionPolicy policy, const TruthStatus& truth,
                                    bool correct);

}  // namespace kforge

#endif  // KFORGE_EVAL_PRECISION_SUMMARY_H_
