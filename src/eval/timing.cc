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

std::vector<std::string> TimingWarnings(const TimingStats& candidate,
                                        const std::optional<TimingStats>& eager) {
  std::vector<std::string> warnings;
  auto noisy = [&warnings](const char* what, const TimingStats& t) {
    if (t.rel_std <= kNoisyRelStd) return;
    warnings.push_back(fmt::format(
        "the {} timing is noisy ({:.0f} % relative noise, above {:.0f} %): other work shares "
        "this machine, so its median and speedups are rough; time on a quiet machine",
        what, t.rel_std * 100, kNoisyRelStd * 100));
  };
  noisy("candidate's", candidate);
  if (eager) noisy("eager baseline's", *eager);
  if (eager && !eager->clock.empty() && !candidate.clock.empty() &&
      eager->clock != candidate.clock) {
    warnings.push_back(fmt::format(
        "the candidate was timed by {} and the eager baseline by {}: the speedup compares two "
        "clocks",
        candidate.clock, eager->clock));
  }
  return warnings;
}

std::string TimingStats::Describe() const {
  return fmt::format(
             "median {} (mean {}, min {}, p10-p90 {}-{}), noise {:.2f} %, {} samples, stopped by "
             "{}, "
             "clock {}",
             FormatSeconds(median_s), FormatSeconds(mean_s), FormatSeconds(min_s),
             FormatSeconds(p10_s), FormatSeconds(p90_s), rel_std * 100, samples, stopped_by,
             clock) +
         SideFigures();
}

std::string TimingStats::SideFigures() const {
  std::string out;
  if (median_ci_low_s && median_ci_high_s) {
    out += fmt::format(", median within {}-{} (95 %)", FormatSeconds(*median_ci_low_s),
                       FormatSeconds(*median_ci_high_s));
  }
  if (checked_samples > 0) out += fmt::format(", {} timed samples checked", checked_samples);
  if (sm_clock_mhz) out += fmt::format(", SM {} MHz", *sm_clock_mhz);
  if (discarded > 0) out += fmt::format(", {} throttled samples discarded", discarded);
  if (warm_median_s) out += fmt::format("; warm {}", FormatSeconds(*warm_median_s));
  if (graph_replay_median_s) {
    out += fmt::format("; graph replay {}", FormatSeconds(*graph_replay_median_s));
    if (graph_calls > 0) out += fmt::format(" per call of {} in one graph", graph_calls);
  }
  if (host_sync_median_s)
    out += fmt::format("; host-synchronised {}", FormatSeconds(*host_sync_median_s));
  if (side_stream_suspect) out += " (SUSPECT: work the events did not see)";
  return out;
}

std::string PhysicsFloor::Describe() const {
  return fmt::format("floor {} (compute {}{}, memory {}{})", FormatSeconds(floor_s),
                     compute_s > 0 ? FormatSeconds(compute_s) : "unknown",
                     rate_used.empty() ? "" : " at the " + rate_used + " matmul rate",
                     memory_s > 0 ? FormatSeconds(memory_s) : "unknown",
                     memory_level.empty() || memory_s <= 0
                         ? ""
                         : " at the " + memory_level + " copy rate");
}

}  // namespace kforge
