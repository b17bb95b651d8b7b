#include "kforge/core/load_monitor.h"

#include <dirent.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "kforge/core/nvml.h"

namespace kforge {
namespace {

std::uint64_t WallMicros() {
  timeval tv{};
  ::gettimeofday(&tv, nullptr);
  return static_cast<std::uint64_t>(tv.tv_sec) * 1000000u + static_cast<std::uint64_t>(tv.tv_usec);
}

double TicksPerSecond() {
  static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return ticks > 0 ? ticks : 100.0;
}

struct ProcStat {
  pid_t ppid = 0;
  std::uint64_t utime = 0, stime = 0, cutime = 0, cstime = 0;  // clock ticks
};

// Fields of /proc/<pid>/stat after the command (which may hold spaces and parentheses).
bool ReadProcStat(pid_t pid, ProcStat& out) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text;
  std::getline(in, text);  // one line
  const auto close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 2));
  std::string state;
  long long ppid = 0, skip = 0;
  fields >> state >> ppid;
  for (int i = 0; i < 9; ++i) fields >> skip;  // pgrp .. cmajflt: fields 5-13
  fields >> out.utime >> out.stime >> out.cutime >> out.cstime;
  out.ppid = static_cast<pid_t>(ppid);
  return static_cast<bool>(fields);
}

std::map<pid_t, ProcStat> AllProcesses() {
  std::map<pid_t, ProcStat> all;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return all;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    ProcStat st;
    if (ReadProcStat(static_cast<pid_t>(pid), st)) all[static_cast<pid_t>(pid)] = st;
  }
  ::closedir(dir);
  return all;
}

double Percent(double x) { return x * 100.0; }

}  // namespace

LoadMonitor::CpuTimes LoadMonitor::ReadCpuTimes() {
  CpuTimes t;
  std::ifstream in("/proc/stat");
  std::string cpu;
  std::uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
                steal = 0;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  if (cpu != "cpu") return t;
  t.busy = user + nice + system + irq + softirq;  // guest time is inside user already
  t.steal = steal;
  t.total = t.busy + idle + iowait + steal;
  return t;
}

double LoadMonitor::TreeCpuSeconds(pid_t root, std::set<pid_t>* pids) {
  if (root <= 0) return 0;
  const auto all = AllProcesses();
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, st] : all) children.emplace(st.ppid, pid);
  auto it = all.find(root);
  if (it == all.end()) return 0;
  // The root's own time and what its reaped descendants left in it; live descendants' own time.
  std::uint64_t ticks = it->second.utime + it->second.stime + it->second.cutime + it->second.cstime;
  std::vector<pid_t> pending = {root};
  while (!pending.empty()) {
    const pid_t p = pending.back();
    pending.pop_back();
    if (pids != nullptr) pids->insert(p);
    auto [first, last] = children.equal_range(p);
    for (auto c = first; c != last; ++c) {
      const ProcStat& st = all.at(c->second);
      ticks += st.utime + st.stime;
      pending.push_back(c->second);
    }
  }
  return static_cast<double>(ticks) / TicksPerSecond();
}

LoadMonitor::LoadMonitor(std::vector<pid_t> own_roots, std::string device)
    : start_(std::chrono::steady_clock::now()),
      start_wall_us_(WallMicros()),
      cpu_start_(ReadCpuTimes()),
      device_(std::move(device)) {
  for (pid_t root : own_roots) {
    if (root > 0) own_start_seconds_[root] = TreeCpuSeconds(root, &own_pids_);
  }
}

LoadReading LoadMonitor::Finish(const std::map<pid_t, double>& ended,
                                const LoadThresholds& thresholds) const {
  LoadReading r;
  const CpuTimes end = ReadCpuTimes();
  r.window_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  r.host_cpus = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  const double window = std::max(r.window_seconds, 1e-3);
  r.host_busy_cores =
      static_cast<double>(end.busy - cpu_start_.busy) / TicksPerSecond() / window;
  double own = 0;
  for (const auto& [root, at_start] : own_start_seconds_) {
    auto it = ended.find(root);
    const double at_end = it != ended.end() ? it->second : TreeCpuSeconds(root, nullptr);
    own += std::max(0.0, at_end - at_start);
  }
  r.own_cpu_cores = own / window;
  r.other_cpu_cores = std::max(0.0, r.host_busy_cores - r.own_cpu_cores);
  const std::uint64_t total = end.total - cpu_start_.total;
  r.steal_fraction =
      total > 0 ? static_cast<double>(end.steal - cpu_start_.steal) / static_cast<double>(total)
                : 0.0;
  if (std::ifstream in("/proc/loadavg"); in) in >> r.loadavg_1m;

  if (r.other_cpu_cores >= thresholds.other_cpu_cores) {
    r.reasons.push_back(fmt::format(
        "other processes used {:.2f} of the host's {} cores during the timing", r.other_cpu_cores,
        r.host_cpus));
  }
  if (r.steal_fraction >= thresholds.steal_fraction) {
    r.reasons.push_back(fmt::format(
        "the hypervisor gave {:.0f} % of this machine's CPU time to other guests",
        Percent(r.steal_fraction)));
  }

  r.device = device_.starts_with("cuda") ? device_ : "";
  if (!r.device.empty()) {
    auto nvml = Nvml::Get();
    auto device = nvml ? (*nvml)->DeviceFor(r.device) : Result<Nvml::Device>(std::unexpected(nvml.error()));
    auto samples = device ? (*nvml)->ProcessUtilization(*device, start_wall_us_)
                          : Result<std::vector<Nvml::ProcessSample>>(std::unexpected(device.error()));
    if (!samples) {
      r.device_note = samples.error().message;
    } else {
      r.device_measured = true;
      std::map<pid_t, unsigned> peak;
      for (const auto& s : *samples) peak[s.pid] = std::max(peak[s.pid], s.sm_util);
      // Own: the evaluation's tree. Other: any other process of this pid namespace. Foreign: a
      // pid /proc does not know (another namespace's, or a process that has ended).
      std::vector<pid_t> active;
      bool any_visible = false;
      for (const auto& [pid, util] : peak) {
        const bool is_own = own_pids_.contains(pid);
        const bool visible = is_own || ::access(fmt::format("/proc/{}", pid).c_str(), F_OK) == 0;
        any_visible = any_visible || visible;
        if (util >= thresholds.device_sm_util) active.push_back(pid);
        if (is_own || !visible) continue;
        r.device_other_sm_util = std::max(r.device_other_sm_util, util);
        if (util >= thresholds.device_sm_util) r.device_other_pids.push_back(pid);
      }
      r.device_note = fmt::format("{} process{} sampled", peak.size(), peak.size() == 1 ? "" : "es");
      if (!peak.empty() && !any_visible) {
        // NVML's pids are another namespace's (KForge in a container): only "more than one busy
        // at once" can be seen.
        r.device_note += "; NVML's pids are not this namespace's, so the evaluation's own "
                         "process cannot be told apart";
        if (active.size() >= 2) {
          r.device_other_pids = active;
          for (const auto& [pid, util] : peak) {
            r.device_other_sm_util = std::max(r.device_other_sm_util, util);
          }
        }
      }
      if (!r.device_other_pids.empty()) {
        r.reasons.push_back(fmt::format(
            "{} other process{} used the device during the timing (SM utilisation up to {} %)",
            r.device_other_pids.size(), r.device_other_pids.size() == 1 ? "" : "es",
            r.device_other_sm_util));
      }
    }
  }
  r.busy = !r.reasons.empty();
  return r;
}

std::string LoadReading::Describe() const {
  std::string text = fmt::format(
      "host: {:.2f} other cores busy of {} (evaluation {:.2f}), steal {:.0f} %, load {:.2f}",
      other_cpu_cores, host_cpus, own_cpu_cores, Percent(steal_fraction), loadavg_1m);
  if (!device.empty()) {
    text += device_measured
                ? fmt::format("; {}: other processes up to {} % SM", device, device_other_sm_util)
                : fmt::format("; {}: not measured ({})", device, device_note);
  }
  if (busy) text += fmt::format(" — busy: {}", fmt::join(reasons, "; "));
  return text;
}

}  // namespace kforge
