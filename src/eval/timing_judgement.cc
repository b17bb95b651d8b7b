#include "timing_judgement.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace kforge {

void JudgeTiming(Verdict& v, const Calibration* calibration) {
  if (!v.timing || v.timing->median_s <= 0) return;
  const double median = v.timing->median_s;
  std::optional<double> compile;
  for (const auto* b : {&v.compile_baseline, &v.compile_max_autotune_baseline}) {
    if (*b && (*b)->median_s > 0)
      compile = std::min(compile.value_or((*b)->median_s), (*b)->median_s);
  }
  if (v.eager_baseline && v.eager_baseline->median_s > 0) {
    v.speedup_vs_eager = v.eager_baseline->median_s / median;
  }
  if (compile) v.speedup_vs_compile = *compile / median;
  std::optional<double> best = compile;
  if (v.eager_baseline && v.eager_baseline->median_s > 0) {
    best = std::min(best.value_or(v.eager_baseline->median_s), v.eager_baseline->median_s);
  }
  if (best) v.speedup_vs_best_baseline = *best / median;

  std::vector<std::string> reasons;
  if (calibration != nullptr && v.work) {
    v.floor = FloorFor(*v.work, *calibration, v.policy);
    if (v.floor) {
      v.sol_fraction = v.floor->floor_s / median;
      if (median < kImpossibleFractionOfFloor * v.floor->floor_s) {
        v.status = EvalStatus::kRejected;
        v.message = fmt::format(
            "impossible time: the median {} is below half the physics floor of this call on "
            "{} ({}); no correct kernel can be that fast, so the timing was fooled",
            FormatSeconds(median), calibration->device_name, v.floor->Describe());
        return;
      }
    }
  }
  // A time physics allows counts, however large the speedup; only where physics cannot judge
  // (no floor) does a large speedup wait for a person, and the hold says why.
  if (!v.floor && v.speedup_vs_best_baseline && *v.speedup_vs_best_baseline > kReviewSpeedup) {
    const std::string why = calibration == nullptr ? "this device has no calibration"
                            : !v.work ? "the reference's work of one call is unknown"
                                      : "the call's work gives no floor (no FLOP or byte figure "
                                        "this calibration can rate)";
    reasons.push_back(fmt::format(
        "{:.3g}x faster than the fastest baseline and physics cannot judge the time ({}): over "
        "{:g}x without a floor waits for a person's look",
        *v.speedup_vs_best_baseline, why, kReviewSpeedup));
  }
  if (v.timing->side_stream_suspect) {
    reasons.push_back(fmt::format(
        "the device-synchronised host time ({}) is far above the event time ({}): work ran "
        "where the timing events did not see it (another stream?)",
        FormatSeconds(v.timing->host_sync_median_s.value_or(0)),
        FormatSeconds(v.timing->warm_median_s.value_or(median))));
  }
  if (!reasons.empty()) {
    v.held_for_review = true;
    v.review_reason = reasons.front();
    for (std::size_t i = 1; i < reasons.size(); ++i) v.review_reason += "; " + reasons[i];
  }
}

}  // namespace kforge
