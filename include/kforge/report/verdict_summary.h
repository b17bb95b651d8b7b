// The figures a report needs from one stored verdict (docs/verdict.md), parsed into a struct at
// the edge so that the rest of the report module never sees JSON.
//
// Fields the verdict does not carry stay unset (std::nullopt, or empty): a report says "not
// measured" for them and never fills them in. Timing fields added after verdict version 1
// (`compile_baseline`, `compile_max_autotune_baseline`, `speedup_vs_compile`,
// `speedup_vs_best_baseline`, `sol_fraction`, `held_for_review`, `review_reason`) are read when
// present.
#ifndef KFORGE_REPORT_VERDICT_SUMMARY_H_
#define KFORGE_REPORT_VERDICT_SUMMARY_H_

#include <optional>
#include <string>
#include <string_view>

#include "kforge/core/error.h"

namespace kforge::report {

// One statistics object of `timing` (candidate or a baseline), reduced to what reports show.
struct TimingSummary {
  double median_s = 0;
  double rel_std = 0;
  long samples = 0;
  std::string clock;  // perf_counter, events-warm, opencl-events, ...

  bool operator==(const TimingSummary&) const = default;
};

struct VerdictSummary {
  std::string status;       // the verdict's own status text (the evaluation row is authoritative)
  std::string message;      // one paragraph, free text from the harness (may quote candidate text)
  std::string diagnostics;  // trimmed compiler/runtime output (candidate-controlled text)
  // Precision policy and the tolerance it implied; empty policy when the verdict has none.
  std::string policy;
  std::optional<double> atol;
  std::optional<double> rtol;
  // Verdict version 2 (empty / nullopt in version 1): how the precision contract judged
  // ("truth", "tolerance", "exact"), the worst error ratio, and the precision a correct
  // candidate's outputs met ("strict", "tf32", "mixed").
  std::string precision_rule;
  std::optional<double> worst_error_ratio;
  std::string achieved_precision;
  bool degenerate = false;
  std::string degenerate_flags;  // "all_zero, constant" — the flags that were set
  int guardrail_flags = 0;
  bool timed = false;  // the verdict has a `timing` object
  std::optional<TimingSummary> candidate_time;
  std::optional<TimingSummary> eager_baseline;
  std::optional<TimingSummary> compile_baseline;
  std::optional<TimingSummary> compile_max_autotune_baseline;
  std::optional<double> speedup_vs_eager;
  std::optional<double> speedup_vs_compile;
  std::optional<double> speedup_vs_best_baseline;
  std::optional<double> sol_fraction;
  bool held_for_review = false;
  std::string review_reason;

  bool operator==(const VerdictSummary&) const = default;
};

// Parses `verdict_json`; kParse naming `where` when it is not a JSON object. Fields of the wrong
// type are treated as absent, not as errors: a report shows what it can.
Result<VerdictSummary> ParseVerdictSummary(std::string_view verdict_json, std::string_view where);

}  // namespace kforge::report

#endif  // KFORGE_REPORT_VERDICT_SUMMARY_H_
