// Timing of one call, as the runner measured it (runner/PROTOCOL.md, "Timing"), and the options
// that say when the runner stops sampling.
#ifndef KFORGE_EVAL_TIMING_H_
#define KFORGE_EVAL_TIMING_H_

#include <optional>
#include <string>
#include <vector>

namespace kforge {

// When the runner stops sampling. The defaults are EVAL-PROTOCOL's stopping rule.
struct TimingOptions {
  int min_samples = 10;           // at least this many timed samples
  double min_seconds = 0.5;       // and at least this much summed sample time
  double max_seconds = 15;        // stop after this much wall time whatever the noise
  double target_rel_std = 0.005;  // stop once the relative standard deviation is below; 0: off
  double warmup_seconds = 0.2;    // untimed calls first, at least one
  // Parent-driven timing (native harness, runner/HARNESS.md): stop once the 95 % confidence
  // interval of the median is narrower than this share of it (eval/median_interval.h), after at
  // least min_samples samples; max_seconds stays the cap. The Python runner's own timing keeps
  // target_rel_std.
  double target_median_ci = 0.01;
};

// Statistics of the timed samples of one call, in seconds.
struct TimingStats {
  std::string clock;    // perf_counter, events-cold (cuda), opencl-events
  double median_s = 0;  // the ranking statistic
  double mean_s = 0;
  double min_s = 0;
  double p10_s = 0;
  double p90_s = 0;
  double rel_std = 0;  // sample standard deviation / mean
  int samples = 0;
  std::string stopped_by;  // noise, timeout, min; parent-driven timing: ci, timeout
  // The cold protocol on cuda devices (runner/kforge_runner/cuda_timing.py); absent elsewhere.
  int discarded = 0;                            // throttled samples left out
  std::optional<int> sm_clock_mhz;              // median SM clock of the kept samples
  std::optional<double> warm_median_s;          // events, caches warm (labelled "warm")
  std::optional<double> graph_replay_median_s;  // the call captured in a CUDA graph, replayed
  std::string graph_replay_error;               // why there is no graph figure
  std::optional<double> host_sync_median_s;     // device-synchronised host clock
  bool side_stream_suspect = false;             // host time far above the event time
  std::string cold_json;                        // what the cold protocol did (flush bytes, spin)
  // Parent-driven timing (native harness): the median's 95 % interval, how many timed samples
  // were compared with the reference, the parent's own figure per call (eval/harness_timing.h)
  // and the calls in the graph of the graph-replay side figure.
  std::optional<double> median_ci_low_s;
  std::optional<double> median_ci_high_s;
  int checked_samples = 0;
  double check_seconds = 0;  // the parent's time freezing, copying and comparing timed outputs
  std::optional<double> parent_median_s;
  int graph_calls = 0;

  // "median 1.23 ms (mean 1.25 ms, min 1.20 ms, p10-p90 1.21-1.31 ms), noise 0.4 %,
  // 812 samples, stopped by noise, clock perf_counter"
  std::string Describe() const;
  // "; warm 8.5 us; graph replay 8.1 us; host-synchronised 20 us" (empty when none).
  std::string SideFigures() const;
};

// The work of one call of the reference, for the physics floor (EVAL-PROTOCOL timing rule 7).
struct CallWork {
  std::optional<double> flops;  // PyTorch's FLOP counter; absent where torch has none
  double min_bytes = 0;  // each input, parameter and buffer read once, each output written once
  std::string dtype;     // widest floating dtype of inputs and parameters ("float32", ...)
};

// The shortest time one call can take on a calibrated device (eval/calibration.h, FloorFor).
struct PhysicsFloor {
  double floor_s = 0;
  double compute_s = 0;  // 0 when FLOPs are unknown
  double memory_s = 0;
  std::string rate_used;  // which matmul rate: "float32", "tf32", "bfloat16", ...
  std::string memory_level;  // whose copy rate: "L2", "L3", "memory"; "" when unknown
  std::string Describe() const;
};

// Relative noise (TimingStats::rel_std) above which a timing is too noisy to quote as a
// measurement: a busy or shared machine (CPU targets, where other work shares the cores). Its
// median is still the ranking statistic; the verdict says it is noisy.
inline constexpr double kNoisyRelStd = 0.10;

// What a reader of `candidate`'s timing (and of its speedup over `eager`) must be warned of, one
// line each: noise above kNoisyRelStd, or the two timed on different clocks (the speedup then
// compares two clocks). Empty when nothing.
std::vector<std::string> TimingWarnings(const TimingStats& candidate,
                                        const std::optional<TimingStats>& eager);

// A duration for people: "812 ns", "12.3 us", "4.56 ms", "1.23 s".
std::string FormatSeconds(double seconds);

}  // namespace kforge

#endif  // KFORGE_EVAL_TIMING_H_
