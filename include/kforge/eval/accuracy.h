// The precision contract (EVAL-PROTOCOL correctness rule 3): one output of one trial judged by
// measured accuracy, not by the types a kernel names.
//
// With a float64 truth (the reference model run in float64 on the same inputs), the candidate's
// error against the truth is set beside the task-precision reference's own error against the
// truth. For a floating output of dtype D, with S = the largest finite |truth| of the output and
// eps(D) the spacing of D at 1 (float32 2^-23, float64 2^-52, bfloat16 2^-7, float16 2^-10):
//
//   reference error  E_ref = max |reference - truth|
//   floor                  = kFloorEps(D) * eps(D) * S       (the scale of the output, not an atol)
//   allowed                = kFactor(D) * max(E_ref, floor)  [tf32: at least 1e-3 * S;
//                                                             mixed: at least 1e-2 * S]
//   error ratio            = max |candidate - truth| / max(E_ref, floor)
//
// and the output passes when every element's |candidate - truth| is within `allowed`. float32 and
// float64 outputs use kFactor 64 and kFloorEps 4; bfloat16 and float16 outputs are judged at
// their own precision under every policy (kFactor 4, kFloorEps 1: the tf32/mixed allowances do
// not apply to them). docs/verdict.md "Precision" gives the calibration behind the constants.
//
// Without a truth (a task whose model cannot run in float64, or an output the float64 run did not
// produce in float64), the tolerance rule applies against the reference: |c - r| <= atol + rtol*|r|
// with the policy's tolerance for float32/float64 outputs and torch.testing's per-dtype defaults
// for low-precision ones (bfloat16: rtol 1.6e-2, float16: rtol 1e-3, atol 1e-5; the policy's when
// it is looser).
//
// Everywhere: NaN never matches; an infinity matches the same infinity; where the reference is not
// finite the candidate must equal it; integer and bool outputs must equal the reference exactly;
// dtype and shape must match the reference's.
#ifndef KFORGE_EVAL_ACCURACY_H_
#define KFORGE_EVAL_ACCURACY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/eval/tensor_compare.h"
#include "kforge/eval/tensor_view.h"
#include "kforge/task/task.h"

namespace kforge {

// The contract's constants (see the file comment; calibration in docs/verdict.md).
inline constexpr double kAccuracyFactor = 64;           // float32, float64 outputs
inline constexpr double kAccuracyFloorEps = 4;          // floor in eps(D) * S
inline constexpr double kLowPrecisionFactor = 4;        // bfloat16, float16 outputs
inline constexpr double kLowPrecisionFloorEps = 1;
inline constexpr double kTf32RelativeAllowance = 1e-3;  // of S, float32/float64 outputs
inline constexpr double kMixedRelativeAllowance = 1e-2;

// Which rule judged an output. Stored in verdicts as its name; never renamed.
enum class AccuracyRule {
  kTruth,      // against the float64 truth, relative to the reference's own error
  kTolerance,  // atol/rtol against the task-precision reference (no truth)
  kExact,      // integer and bool outputs: equal to the reference
};
std::string_view AccuracyRuleName(AccuracyRule rule);

struct OutputJudgement {
  bool ok = false;
  std::string problem;  // why not, one line naming the output (empty when ok)
  AccuracyRule rule = AccuracyRule::kTolerance;
  // The candidate's error: against the truth under kTruth, against the reference otherwise.
  double max_abs_error = 0;
  double max_rel_error = 0;  // over elements whose expected value is not zero
  double fraction_bad = 0;   // elements beyond the allowance / all elements
  // kTruth only (else nullopt): the reference's own max error against the truth, the output's
  // scale S, the allowance that applied and the error ratio.
  std::optional<double> reference_error;
  std::optional<double> scale;
  std::optional<double> allowed_error;
  std::optional<double> error_ratio;
  // Whether the output also meets strict (the precision a tf32/mixed candidate really achieved).
  bool meets_strict = false;
  std::int64_t first_bad_index = -1;
  double first_bad_expected = 0;
  double first_bad_actual = 0;
};

// Judges one output. `truth` may be null (tolerance rule; it is ignored for integer and bool
// outputs). `name` names the output in `problem`. A candidate of another dtype, shape or byte count
// is a failed judgement; errors are for the judge's own inputs only: an unknown dtype, a reference
// whose bytes do not match its dtype and shape, a truth that is not float64 of the reference's
// shape. Thread-safe; reads each view at most twice.
Result<OutputJudgement> JudgeOutput(const TensorView& candidate, const TensorView& reference,
                            const TensorView* truth, PrecisionPolicy policy,
                            std::string_view name = "output");

// The file-based layer: one output's candidate, reference and (optional) truth files.
struct OutputFiles {
  const TensorFile* candidate = nullptr;
  const TensorFile* reference = nullptr;
  const TensorFile* truth = nullptr;  // may be null
};

// JudgeOutput over mapped files, each on one of up to `max_threads` threads (0: the hardware's
// count, at most 16); results in order. Errors only for unreadable files or a reference file of
// the wrong size; a candidate file of the wrong size is a failed judgement.
std::vector<Result<OutputJudgement>> JudgeOutputFiles(const std::vector<OutputFiles>& outputs,
                                                      PrecisionPolicy policy,
                                                      unsigned max_threads = 0);

}  // namespace kforge

#endif  // KFORGE_EVAL_ACCURACY_H_
