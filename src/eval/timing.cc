#include "kforge/eval/timing.h"

#include <fmt/format.h>

#include <cmath>

namespace kforge {

std::string FormatSeconds(double seconds) {
  const double a = std::fabs(seconds);
  if (a < 1e-6) return fmt::format("{:.0f} ns", seconds * 1e9);
  if (a < 1e-3) return fmt::format("{:.3g} us", seconds * 1e6);
  if (a < 1) return fmt::format("{:.3g} ms", seconds * 1e3);
  return fmt::format("{:.3g} s", seconds);
}

std::string TimingStats::Describe() const {
  return fmt::format(
      "median {} (mean {}, min {}, p10-p90 {}-{}), noise {:.2f} %, {} samples, stopped by {}, "
      "clock {}",
      FormatSeconds(median_s), FormatSeconds(mean_s), FormatSeconds(min_s), FormatSeconds(p10_s),
      FormatSeconds(p90_s), rel_std * 100, samples, stopped_by, clock);
}

}  // namespace kforge
