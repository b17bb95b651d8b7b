#include "precision_rule.h"

#include <fmt/format.h>

#include <string_view>
#include <utility>

namespace kforge::guardrails {
namespace {

std::string_view PrecisionText(Precision p) {
  switch (p) {
    case Precision::kTf32:
      return "TF32 (10-bit mantissa matrix math)";
    case Precision::kHalf:
      return "fp16/bf16";
    case Precision::kFp8:
      return "fp8";
  }
  return "";
}

std::string_view PolicyText(PrecisionPolicy policy) {
  switch (policy) {
    case PrecisionPolicy::kStrict:
      return "strict: the error must stay within 64x the fp32 reference's own against a float64 "
             "run";
    case PrecisionPolicy::kTf32:
      return "tf32: fp32 storage, TF32 matrix math allowed, 1e-3 of the output's magnitude";
    case PrecisionPolicy::kMixed:
      return "mixed: fp16/bf16/TF32 compute allowed, 1e-2 of the output's magnitude";
  }
  return "";
}

}  // namespace

void Downcast(Findings& findings, Precision p, int line, std::string found) {
  const GuardrailOptions& options = findings.options();
  if (p == Precision::kHalf && options.task_low_precision) return;
  const std::string detail = fmt::format("(uses {}; the task's policy is {})", PrecisionText(p),
                                         PolicyText(options.policy));
  // A flag under every policy: the precision contract (eval/accuracy.h) measures the outputs'
  // accuracy and settles it, so split precision (3xTF32, bf16x6) that meets strict passes.
  switch (options.policy) {
    case PrecisionPolicy::kStrict:
      findings.Flag("precision-downcast", line, std::move(found), detail);
      return;
    case PrecisionPolicy::kTf32:
      if (p != Precision::kTf32)
        findings.Flag("precision-downcast", line, std::move(found), detail);
      return;
    case PrecisionPolicy::kMixed:
      if (p == Precision::kFp8) findings.Flag("precision-downcast", line, std::move(found), detail);
      return;
  }
}

}  // namespace kforge::guardrails
