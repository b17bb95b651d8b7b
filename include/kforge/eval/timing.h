// Timing of one call, as the runner measured it (runner/PROTOCOL.md, "Timing"), and the options
// that say when the runner stops sampling.
#ifndef KFORGE_EVAL_TIMING_H_
#define KFORGE_EVAL_TIMING_H_

#include <string>

namespace kforge {

// When the runner stops sampling. The defaults are EVAL-PROTOCOL's stopping rule.
struct TimingOptions {
  int min_samples = 10;          // at least this many timed samples
  double min_seconds = 0.5;      // and at least this much summed sample time
  double max_seconds = 15;       // stop after this much wall time whatever the noise
  double target_rel_std = 0.005; // stop once the relative standard deviation is below; 0: off
  double warmup_seconds = 0.2;   // untimed calls first, at least one
};

// Statistics of the timed samples of one call, in seconds.
struct TimingStats {
  std::string clock;       // perf_counter, events-warm, opencl-events
  double median_s = 0;     // the ranking statistic
  double mean_s = 0;
  double min_s = 0;
  double p10_s = 0;
  double p90_s = 0;
  double rel_std = 0;      // sample standard deviation / mean
  int samples = 0;
  std::string stopped_by;  // noise, timeout, min

  // "median 1.23 ms (mean 1.25 ms, min 1.20 ms, p10-p90 1.21-1.31 ms), noise 0.4 %,
  // 812 samples, stopped by noise, clock perf_counter"
  std::string Describe() const;
};

// A duration for people: "812 ns", "12.3 us", "4.56 ms", "1.23 s".
std::string FormatSeconds(double seconds);

}  // namespace kforge

#endif  // KFORGE_EVAL_TIMING_H_
