// Device calibration (`kforge calibrate`) and the physics floor (EVAL-PROTOCOL timing rule 7).
//
// A calibration is what the device measurably does: copy bandwidth (of memory and, on a CPU, of
// each data cache level) and matrix rates per dtype, measured by the runner's `calibrate` phase
// and stored per device name under the cache directory, with the runner environment it was
// measured under. With it, the reference's work of one call (FLOPs and minimum bytes) becomes a
// floor below which no correct kernel can run, and every timing a speed-of-light fraction. A
// timed evaluation on a device without a calibration for its environment measures one first
// (Evaluator; `kforge calibrate` measures again whenever asked).
#ifndef KFORGE_EVAL_CALIBRATION_H_
#define KFORGE_EVAL_CALIBRATION_H_

#include <filesystem>
#include <functional>
#include <vector>
#include <map>
#include <optional>
#include <string>

#include "kforge/core/error.h"
#include "kforge/eval/evaluator.h"
#include "kforge/eval/timing.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge {

// One data cache level of a CPU: a working set up to `bytes` is read from it (a CPU's timing has
// no cache flush between calls).
struct CacheLevel {
  std::string name;                        // L1d, L2, L3
  double bytes = 0;                        // capacity over the instances the runner's cores use
  std::optional<double> copy_bytes_per_s;  // nullopt: not measurable (the call's cost hid it)
};

struct Calibration {
  std::string device_name;                           // as the runner reports it
  std::string target;                                // the target it was measured for
  double copy_bytes_per_s = 0;                       // memory: bytes read + written per second
  std::vector<CacheLevel> cache_levels;              // CPUs: ascending capacity; GPUs: none
  std::map<std::string, double> matmul_flops_per_s;  // float32, tf32, bfloat16, float16
  std::string measured_at;                           // UTC, ISO 8601
  std::string environment_json;                      // the runner's environment

  std::string ToJson() const;
  static Result<Calibration> FromJson(const std::string& text, const std::string& where);
  std::string ToText() const;  // a few lines for the terminal
};

// $KFORGE_CACHE_DIR/calibration/<device name as a file name>.json (see DefaultCompileCacheDir for
// the cache directory's rules).
std::filesystem::path CalibrationPath(const std::string& device_name);

// The stored calibration of `device_name`; nullopt when there is none.
Result<std::optional<Calibration>> LoadCalibration(const std::string& device_name);
Status SaveCalibration(const Calibration& calibration);

// Whether `calibration` was measured under the runner environment `environment_json` describes
// (device name, Python, torch, triton, numpy): if not, the libraries or the device changed and the
// evaluator measures again.
bool CalibrationMatches(const Calibration& calibration, const std::string& environment_json);

// Runs `measure` unless another process is measuring the same device (then waits for it), holding
// an exclusive lock on the calibration file's `.lock` beside it; afterwards returns the stored
// calibration if it matches `environment_json`, else what `measure` returned (saved).
Result<Calibration> CalibrateOnce(const std::string& device_name,
                                  const std::string& environment_json,
                                  const std::function<Result<Calibration>()>& measure);

// Runs the runner's calibrate phase for `backend`'s device (a few seconds to a minute).
Result<Calibration> MeasureCalibration(const Backend& backend, const std::string& target,
                                       const EvalOptions& options);

// The floor of one call (timing.h's PhysicsFloor): the larger of compute time (FLOPs at the
// matrix rate the policy allows for the task's dtype) and memory time (minimum bytes at the copy
// bandwidth of the smallest level they fit in: a cache level of a CPU, else memory; no memory
// time when that level has no rate); nullopt when nothing is known.
std::optional<PhysicsFloor> FloorFor(const CallWork& work, const Calibration& calibration,
                                     PrecisionPolicy policy);

// A time below this fraction of the floor is rejected as impossible. Not 1: outputs may still sit
// in a write-back cache when the kernel ends, and the copy rate is measured, not a hard limit.
inline constexpr double kImpossibleFractionOfFloor = 0.5;
// A speedup above this over the fastest baseline is held for review, but only where physics
// cannot judge the time (no floor: no calibration, no work figures); EVAL-PROTOCOL rule 7.
inline constexpr double kReviewSpeedup = 10.0;

}  // namespace kforge

#endif  // KFORGE_EVAL_CALIBRATION_H_
