// When parent-driven sampling stops (runner/HARNESS.md "What the parent decides"; docs/verdict.md
// "Timing"): once the median is known precisely, not once single samples agree. The spread of
// single samples of a microsecond kernel never falls under a fraction of a percent, but the
// median of many such samples is known to that precision quickly.
//
// The interval is the distribution-free confidence interval of the median from order statistics:
// for n sorted samples x(1) <= ... <= x(n), [x(j), x(n+1-j)] with the largest j for which
// P(Binomial(n, 1/2) <= j - 1) <= (1 - confidence) / 2, so it covers the true median with at
// least `confidence` whatever the distribution of the samples (exact binomial sums up to 1000
// samples, the normal approximation above).
#ifndef KFORGE_EVAL_MEDIAN_INTERVAL_H_
#define KFORGE_EVAL_MEDIAN_INTERVAL_H_

#include <optional>
#include <span>

namespace kforge {

struct MedianInterval {
  double median = 0;
  double low = 0;
  double high = 0;
  // (high - low) / median; infinite for a zero median.
  double relative_width() const;
};

// The interval of the median of `samples` (any order) at `confidence`; nullopt when there are
// too few samples for any interval at that confidence (fewer than 6 at 95 %).
std::optional<MedianInterval> MedianConfidenceInterval(std::span<const double> samples,
                                                       double confidence = 0.95);

// The stop rule: at least `min_samples` samples and the interval narrower than
// `max_relative_width` of the median.
bool MedianKnown(std::span<const double> samples, int min_samples = 10,
                 double max_relative_width = 0.01, double confidence = 0.95);

}  // namespace kforge

#endif  // KFORGE_EVAL_MEDIAN_INTERVAL_H_
