// What a correct candidate's timing means (EVAL-PROTOCOL timing rules 3, 6 and 7). Internal to
// src/eval.
#ifndef KFORGE_SRC_EVAL_TIMING_JUDGEMENT_H_
#define KFORGE_SRC_EVAL_TIMING_JUDGEMENT_H_

#include "kforge/eval/calibration.h"
#include "kforge/eval/verdict.h"

namespace kforge {

// With `v.timing` and the baselines in `v`: the speedups against eager, against the faster
// compile mode and against the fastest baseline; with a calibration, the physics floor and the
// speed-of-light fraction, and a time under kImpossibleFractionOfFloor of the floor turns the
// verdict into `rejected`; a time the floor allows counts. A speedup above kReviewSpeedup holds
// the result for review only where there is no floor (no calibration or work figures: the reason
// says which), and so does a side-stream suspicion. `calibration` may be null.
void JudgeTiming(Verdict& v, const Calibration* calibration);

}  // namespace kforge

#endif  // KFORGE_SRC_EVAL_TIMING_JUDGEMENT_H_
