#include "kforge/eval/median_interval.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kforge {
namespace {

// The largest j (1-based) with P(Binomial(n, 1/2) <= j - 1) <= alpha / 2, or 0 if none.
std::size_t LowerRank(std::size_t n, double alpha) {
  const double tail = alpha / 2;
  if (n > 1000) {
    // Normal approximation: the quantile of the standard normal at 1 - alpha / 2 by bisection on erfc.
    double lo = 0, hi = 10;
    for (int i = 0; i < 100; ++i) {
      const double mid = (lo + hi) / 2;
      if (0.5 * std::erfc(mid / std::sqrt(2.0)) > tail) lo = mid; else hi = mid;
    }
    const double q = (lo + hi) / 2;
    const double j = std::floor(static_cast<double>(n) / 2 - q * std::sqrt(static_cast<double>(n)) / 2);
    return j < 1 ? 0 : static_cast<std::size_t>(j);
  }
  // Cumulative binomial probabilities in log space (no overflow for n up to 1000).
  double cumulative = 0;
  std::size_t j = 0;
  const double log_half_n = static_cast<double>(n) * std::log(0.5);
  for (std::size_t k = 0; k < n; ++k) {
    const double log_p = std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(k) + 1) -
                         std::lgamma(static_cast<double>(n - k) + 1) + log_half_n;
    cumulative += std::exp(log_p);
    if (cumulative > tail) break;
    j = k + 1;  // P(X <= k) <= tail: rank k + 1 is a valid lower bound
  }
  return j;
}

}  // namespace

double MedianInterval::relative_width() const {
  if (median == 0) return std::numeric_limits<double>::infinity();
  return (high - low) / std::fabs(median);
}

std::optional<MedianInterval> MedianConfidenceInterval(std::span<const double> samples,
                                                       double confidence) {
  const std::size_t n = samples.size();
  if (n == 0) return std::nullopt;
  const std::size_t j = LowerRank(n, 1 - confidence);
  if (j == 0 || j > n + 1 - j) return std::nullopt;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  MedianInterval m;
  m.median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  m.low = sorted[j - 1];
  m.high = sorted[n - j];
  return m;
}

bool MedianKnown(std::span<const double> samples, int min_samples, double max_relative_width,
                 double confidence) {
  if (static_cast<int>(samples.size()) < min_samples) return false;
  const auto interval = MedianConfidenceInterval(samples, confidence);
  return interval && interval->relative_width() < max_relative_width;
}

}  // namespace kforge
