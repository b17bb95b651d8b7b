#include "timed_phase.h"

#include <algorithm>

namespace kforge {

Result<TimedPhase> TimedPhase::Begin(bool timed, const std::string& device, pid_t phase_pid,
                                     std::vector<pid_t> sibling_pids, std::stop_token stop) {
  TimedPhase phase;
  if (!timed) return phase;
  auto gate = HostGate::Default().Timing(device, stop);
  if (!gate) return std::unexpected(gate.error());
  phase.gate_ = std::move(*gate);
  phase.phase_pid_ = phase_pid;
  sibling_pids.push_back(phase_pid);
  phase.monitor_.emplace(std::move(sibling_pids), device);
  return phase;
}

void TimedPhase::End(std::optional<double> phase_cpu_seconds, Verdict& v,
                     std::optional<LoadReading>& into) {
  gate_ = HostGate::Lease();
  if (!monitor_) return;
  std::map<pid_t, double> ended;
  if (phase_cpu_seconds && phase_pid_ > 0) ended[phase_pid_] = *phase_cpu_seconds;
  into = monitor_->Finish(ended);
  monitor_.reset();
  for (const auto& reason : into->reasons) {
    if (std::find(v.load_reasons.begin(), v.load_reasons.end(), reason) == v.load_reasons.end()) {
      v.load_reasons.push_back(reason);
    }
  }
  v.timed_under_load = v.timed_under_load || into->busy;
}

}  // namespace kforge
