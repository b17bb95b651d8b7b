// The out-of-process device-time check (docs/trust.md, "Nsight Compute before a figure leaves
// KForge"): before a result is reported or exported, the candidate is timed once more by a device
// profiler that is not in the candidate's process — Nsight Compute (`ncu --clock-control none`,
// outside the sandbox, its report in a folder the sandbox hides) around a fresh kforge-harness
// process, on a fresh input set drawn for this check. Its kernel time per call must agree with the
// median the evaluation reported: within kDeviceTimeAgreement of ncu's figure, or
// kDeviceTimeSlackS for kernels whose time is near the cold protocol's resolution (bench/
// RESULTS.md: within 3 % from 17 us up, 0.4 us at 3 us). The outputs of the profiled calls are
// compared with the reference too.
//
// The per-iteration timing of the loop does not pay this: the synthesizer, bench and export call
// it for the results they promote (CheckDeviceTime), and store the outcome in the verdict.
//
// Thread-safety: each call owns its work folder and processes.
#ifndef KFORGE_EVAL_DEVICE_TIME_CHECK_H_
#define KFORGE_EVAL_DEVICE_TIME_CHECK_H_

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kforge/eval/compile_service.h"
#include "kforge/eval/evaluator.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge {

inline constexpr double kDeviceTimeAgreement = 0.03;
inline constexpr double kDeviceTimeSlackS = 0.5e-6;

struct DeviceTimeCheck {
  enum class Outcome { kAgree, kDisagree, kSkipped, kFailed };
  Outcome outcome = Outcome::kSkipped;
  std::string reason;        // skipped or failed: why; disagree: both figures
  double reported_s = 0;     // the evaluation's median
  double device_s = 0;       // the profiler's kernel time per call (median over the calls)
  int calls = 0;
  int kernels_per_call = 0;
  std::string tool;          // "ncu 2025.3.1" or ""

  static std::string_view OutcomeName(Outcome o);  // agree, disagree, skipped, failed
  std::string ToJson() const;                      // the verdict's `device_time_check`
  std::string Describe() const;                    // one line
};

struct DeviceTimeCheckOptions {
  int calls = 5;                            // profiled calls after one warm-up call
  std::chrono::seconds timeout{600};        // the profiled harness, per command
  std::filesystem::path work_root;          // default: DefaultWorkRoot()
  std::optional<std::uint64_t> seed;        // default: fresh
  // The profiled process keeps KForge's user (sandboxed, read-only, no network): GPU counters are
  // usually restricted to administrators (NVreg_RestrictProfilingToAdminUsers), as in the profile
  // pass.
  bool keep_privileges = true;
};

// The check for `candidate` (the evaluated file) against `reported_median_s`. Never an error: a
// check that cannot run says so in `reason` (skipped: no ncu, not a CUDA native candidate;
// failed: the profiled run broke).
DeviceTimeCheck CheckDeviceTime(CompileService& compiler, const Task& task, const Backend& backend,
                                const std::filesystem::path& candidate, double reported_median_s,
                                const DeviceTimeCheckOptions& options = {});

// ncu's CSV (`--csv --print-units base --metrics gpu__time_duration.sum`): each kernel's duration
// in seconds, in launch order. Exposed for tests.
std::vector<double> ParseNcuDurations(const std::string& csv);

}  // namespace kforge

#endif  // KFORGE_EVAL_DEVICE_TIME_CHECK_H_
