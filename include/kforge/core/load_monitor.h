// Load monitor: how busy the host and the device were with work other than an evaluation's own
// during a window (a timed phase), so that a timing taken beside competing work says so.
//
// Host: the CPU time the whole host used in the window (/proc/stat) less what the evaluation's
// own processes used (the process trees under its runners), as mean cores; the hypervisor's steal
// time as a share; the 1-minute load average at the end (reported, not judged: it counts this
// evaluation's own threads). Device (CUDA devices, through NVML): the highest SM utilisation any
// other process reached in the window's samples. When NVML's pids are not this process's (KForge
// in a container without the host's pid namespace), own and other cannot be told apart: then two
// or more processes busy at once is what counts.
//
// The thresholds say when the reading is "busy": a timing taken then is flagged (a verdict field
// and a flag), and a bench times it once more.
//
// Thread-safety: a LoadMonitor belongs to one thread; separate monitors may run at once.
#ifndef KFORGE_CORE_LOAD_MONITOR_H_
#define KFORGE_CORE_LOAD_MONITOR_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kforge {

struct LoadThresholds {
  double other_cpu_cores = 0.25;     // mean cores used outside the evaluation
  double steal_fraction = 0.10;      // share of the host's CPU time stolen by the hypervisor
  unsigned device_sm_util = 5;       // percent: another process's SM utilisation in any sample
};

struct LoadReading {
  double window_seconds = 0;
  int host_cpus = 0;
  double host_busy_cores = 0;     // mean cores busy over the window, every process
  double own_cpu_cores = 0;       // of which the evaluation's own processes
  double other_cpu_cores = 0;     // host_busy_cores - own_cpu_cores (never below 0)
  double steal_fraction = 0;
  double loadavg_1m = 0;          // at the end of the window
  std::string device;             // the device watched ("cuda:0"), or "" (host only)
  bool device_measured = false;
  std::string device_note;        // why the device was not measured, or how it was
  unsigned device_other_sm_util = 0;          // highest SM utilisation of another process
  std::vector<pid_t> device_other_pids;        // processes that passed device_sm_util
  bool busy = false;
  std::vector<std::string> reasons;  // one line per threshold passed

  // One line for the text verdict, e.g. "host: 0.04 other cores of 2, steal 0 %; device: ...".
  std::string Describe() const;
};

class LoadMonitor {
 public:
  // Starts a window now. `own_roots`: the roots of the evaluation's process trees (its runners;
  // 0s are ignored); `device`: a device to watch ("cuda:N" through NVML; anything else: the host
  // only).
  LoadMonitor(std::vector<pid_t> own_roots, std::string device);

  // Ends the window. `ended`: roots that have ended by now, with their whole CPU time
  // (ProcessResult::cpu_seconds, which counts their waited-for descendants); the others are
  // read from /proc.
  LoadReading Finish(const std::map<pid_t, double>& ended = {},
                     const LoadThresholds& thresholds = {}) const;

 private:
  struct CpuTimes {
    std::uint64_t busy = 0;   // clock ticks: user, nice, system, irq, softirq
    std::uint64_t total = 0;  // busy + idle + iowait + steal
    std::uint64_t steal = 0;
  };
  static CpuTimes ReadCpuTimes();
  // CPU seconds of `root` and its live descendants so far (reaped ones count in root's).
  static double TreeCpuSeconds(pid_t root, std::set<pid_t>* pids);

  std::chrono::steady_clock::time_point start_;
  std::uint64_t start_wall_us_ = 0;
  CpuTimes cpu_start_;
  std::map<pid_t, double> own_start_seconds_;  // per root: CPU seconds at the start
  std::set<pid_t> own_pids_;  // the trees at the start (NVML's samples are matched against them)
  std::string device_;
};

}  // namespace kforge

#endif  // KFORGE_CORE_LOAD_MONITOR_H_
