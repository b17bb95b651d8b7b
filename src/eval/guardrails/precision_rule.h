// The precision-downcast rule: what a lower precision than fp32 found in a candidate's source
// becomes under the task's precision policy. Every rule that recognises a lower precision
// (Python names, C types and intrinsics, inline PTX) hands it here, so the policy is decided in
// one place. Internal to src/eval. Thread-safety: as the Findings it writes to.
#ifndef KFORGE_SRC_EVAL_GUARDRAILS_PRECISION_RULE_H_
#define KFORGE_SRC_EVAL_GUARDRAILS_PRECISION_RULE_H_

#include <string>

#include "findings.h"

namespace kforge::guardrails {

// The lower precisions the rules recognise.
enum class Precision { kTf32, kHalf, kFp8 };

// A lower precision than fp32 at `line` (`found`: the code): flagged, never rejected (the
// accuracy check against the float64 truth settles it): under strict always, under tf32/mixed
// only beyond what the policy allows; fp16/bf16 are no downcast when the task itself computes in
// them (a default, such as Triton's tl.dot on fp32 inputs, is flagged the same way).
void Downcast(Findings& findings, Precision p, int line, std::string found);

}  // namespace kforge::guardrails

#endif  // KFORGE_SRC_EVAL_GUARDRAILS_PRECISION_RULE_H_
