// A timed phase of an evaluation (the reference's baselines, the candidate's timing): it holds
// the host's timing gate (core/host_gate.h: no compile on this host runs beside it) and watches
// the load (core/load_monitor.h: a timing taken while other work competed is flagged in the
// verdict). Internal to src/eval.
//
// Thread-safety: a TimedPhase belongs to the evaluation that began it.
#ifndef KFORGE_SRC_EVAL_TIMED_PHASE_H_
#define KFORGE_SRC_EVAL_TIMED_PHASE_H_

#include <sys/types.h>

#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/core/host_gate.h"
#include "kforge/core/load_monitor.h"
#include "kforge/eval/verdict.h"

namespace kforge {

class TimedPhase {
 public:
  // Waits for the gate (a timing on `device`), then starts watching the load; `phase_pid` is
  // the root of the phase's process, `sibling_pids` the evaluation's other processes (its other
  // runner), which are not load either. An untimed phase (`timed` false) holds and watches
  // nothing. Errors: cancelled through `stop`, or the gate's file unusable.
  static Result<TimedPhase> Begin(bool timed, const std::string& device, pid_t phase_pid,
                                  std::vector<pid_t> sibling_pids, std::stop_token stop);

  // Seconds spent waiting for the gate.
  double gate_wait_seconds() const { return gate_.waited_seconds(); }

  // Releases the gate and records the load of the phase into `into`, its reasons into `v`
  // (Verdict::timed_under_load, load_reasons). `phase_cpu_seconds`: the phase's process's whole
  // CPU time once it has ended (ProcessResult::cpu_seconds); nullopt: read from /proc.
  void End(std::optional<double> phase_cpu_seconds, Verdict& v,
           std::optional<LoadReading>& into);

 private:
  pid_t phase_pid_ = 0;
  HostGate::Lease gate_;
  std::optional<LoadMonitor> monitor_;
};

}  // namespace kforge

#endif  // KFORGE_SRC_EVAL_TIMED_PHASE_H_
