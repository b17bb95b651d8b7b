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
// verdict into `rejected`; a speedup above kReviewSpeedup or a side-stream suspicion holds the
// result for review. `calibration` may be null.
void JudgeTiming(Verdict& v, const Calibration* calibration);

}  // namespace kforge

#endif  // KFORGE_SRC_EVAL_TIMING_JUDGEMENT_H_
