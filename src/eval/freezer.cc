#include "kforge/eval/freezer.h"

#include <dirent.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace kforge {
namespace {

namespace fs = std::filesystem;
using Clock = Freezer::Clock;

Status WriteSmall(const fs::path& file, std::string_view text) {
  std::ofstream out(file);
  out << text;
  out.flush();
  if (!out) return IoError(fmt::format("cannot write '{}' to {}", text, file.string()));
  return Ok();
}

std::string ReadSmall(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<pid_t> PidsOf(const fs::path& procs_file) {
  std::vector<pid_t> pids;
  std::ifstream in(procs_file);
  pid_t pid = 0;
  while (in >> pid) pids.push_back(pid);
  return pids;
}

// A unique name for this process's next cgroup.
std::string FreshCgroupName() {
  static std::atomic<int> counter{0};
  return fmt::format("kforge-{}-{}", ::getpid(), counter++);
}

// One cgroup of a freezer hierarchy (v1: freezer.state; v2: cgroup.freeze).
class CgroupFreezer : public Freezer {
 public:
  CgroupFreezer(FreezeMethod method, fs::path dir) : method_(method), dir_(std::move(dir)) {}

  ~CgroupFreezer() override {
    (void)Thaw();
    // Whatever is left of the child (the session killed its group; a process that left the group
    // is still in the cgroup): killed, then the cgroup removed once empty.
    const auto until = Clock::now() + std::chrono::seconds(5);
    std::error_code ec;
    while (Clock::now() < until) {
      const auto pids = PidsOf(dir_ / "cgroup.procs");
      if (pids.empty() && fs::remove(dir_, ec)) return;
      for (pid_t pid : pids) ::kill(pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    fs::remove(dir_, ec);
  }

  FreezeMethod method() const override { return method_; }
  fs::path procs_file() const override { return dir_ / "cgroup.procs"; }
  void Attach(pid_t /*root*/) override {}

  Status Freeze(Clock::time_point deadline) override {
    const bool v1 = method_ == FreezeMethod::kCgroupV1;
    KFORGE_RETURN_IF_ERROR(
        WriteSmall(dir_ / (v1 ? "freezer.state" : "cgroup.freeze"), v1 ? "FROZEN" : "1"));
    frozen_ = true;
    // The kernel freezes asynchronously: v1 reads FREEZING until every task is frozen, v2's
    // cgroup.events says "frozen 1".
    for (int spin = 0;; ++spin) {
      if (v1 ? ReadSmall(dir_ / "freezer.state").starts_with("FROZEN")
             : ReadSmall(dir_ / "cgroup.events").find("frozen 1") != std::string::npos) {
        break;
      }
      if (Clock::now() >= deadline) {
        return TimeoutError(fmt::format("the cgroup {} did not freeze in time", dir_.string()));
      }
      if (spin > 20) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    frozen_processes_ = static_cast<int>(PidsOf(dir_ / "cgroup.procs").size());
    return Ok();
  }

  Status Thaw() override {
    if (!frozen_) return Ok();
    const bool v1 = method_ == FreezeMethod::kCgroupV1;
    KFORGE_RETURN_IF_ERROR(
        WriteSmall(dir_ / (v1 ? "freezer.state" : "cgroup.freeze"), v1 ? "THAWED" : "0"));
    frozen_ = false;
    return Ok();
  }

  void KillAll() override {
    (void)Thaw();
    for (pid_t pid : PidsOf(dir_ / "cgroup.procs")) ::kill(pid, SIGKILL);
  }

  int frozen_processes() const override { return frozen_processes_; }

 private:
  FreezeMethod method_;
  fs::path dir_;
  bool frozen_ = false;
  int frozen_processes_ = 0;
};

// The state letter and parent of /proc/<pid>[/task/<tid>]/stat, parsed after the command name
// (which may hold spaces and parentheses).
bool ReadStat(const fs::path& stat_file, char& state, pid_t& ppid) {
  const std::string text = ReadSmall(stat_file);
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos || close + 4 > text.size()) return false;
  std::istringstream rest(text.substr(close + 2));
  rest >> state >> ppid;
  return static_cast<bool>(rest);
}

// Every process of the machine with its parent.
std::map<pid_t, pid_t> ParentsOfAll() {
  std::map<pid_t, pid_t> parents;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return parents;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    char state = 0;
    pid_t ppid = 0;
    if (ReadStat(fs::path("/proc") / e->d_name / "stat", state, ppid)) {
      parents[static_cast<pid_t>(pid)] = ppid;
    }
  }
  ::closedir(proc);
  return parents;
}

// True when every thread of `pid` is stopped (T, t), dead (X) or a zombie (Z), or it is gone.
bool AllThreadsStopped(pid_t pid) {
  const fs::path tasks = fs::path("/proc") / std::to_string(pid) / "task";
  std::error_code ec;
  fs::directory_iterator it(tasks, ec);
  if (ec) return true;  // gone
  for (const auto& t : it) {
    char state = 0;
    pid_t ppid = 0;
    if (!ReadStat(t.path() / "stat", state, ppid)) continue;  // the thread ended
    if (state != 'T' && state != 't' && state != 'Z' && state != 'X') return false;
  }
  return true;
}

class SignalFreezer : public Freezer {
 public:
  ~SignalFreezer() override { (void)Thaw(); }

  FreezeMethod method() const override { return FreezeMethod::kSignals; }
  fs::path procs_file() const override { return {}; }
  void Attach(pid_t root) override { root_ = root; }

  Status Freeze(Clock::time_point deadline) override {
    if (root_ <= 0) return Internal("the freezer has no process to freeze");
    // Stop what is known, look again for processes started meanwhile, until a pass finds none
    // new and every thread of every one of them is stopped (a stopped process cannot fork).
    while (true) {
      std::set<pid_t> tree = Tree();
      bool new_ones = false;
      for (pid_t pid : tree) {
        if (stopped_.insert(pid).second) {
          ::kill(pid, SIGSTOP);
          new_ones = true;
        }
      }
      bool all_stopped = true;
      for (pid_t pid : stopped_) all_stopped = all_stopped && AllThreadsStopped(pid);
      if (!new_ones && all_stopped && Tree() == tree) break;
      if (Clock::now() >= deadline) {
        return TimeoutError("the child's processes did not all stop in time");
      }
      if (!all_stopped) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    frozen_processes_ = static_cast<int>(stopped_.size());
    return Ok();
  }

  Status Thaw() override {
    for (pid_t pid : stopped_) ::kill(pid, SIGCONT);
    stopped_.clear();
    return Ok();
  }

  void KillAll() override {
    // Stopped first, so that nothing forks between the walk and the kill; SIGKILL ends stopped
    // processes too.
    if (root_ > 0) (void)Freeze(Clock::now() + std::chrono::seconds(2));
    for (pid_t pid : stopped_) ::kill(pid, SIGKILL);
    stopped_.clear();
  }

  int frozen_processes() const override { return frozen_processes_; }

 private:
  // The root and every process below it now.
  std::set<pid_t> Tree() const {
    const auto parents = ParentsOfAll();
    std::map<pid_t, std::vector<pid_t>> children;
    for (const auto& [pid, ppid] : parents) children[ppid].push_back(pid);
    std::set<pid_t> tree;
    if (!parents.contains(root_)) return tree;
    std::vector<pid_t> todo{root_};
    while (!todo.empty()) {
      const pid_t pid = todo.back();
      todo.pop_back();
      if (!tree.insert(pid).second) continue;
      for (pid_t c : children[pid]) todo.push_back(c);
    }
    return tree;
  }

  pid_t root_ = 0;
  std::set<pid_t> stopped_;
  int frozen_processes_ = 0;
};

// The mount point of the cgroup2 hierarchy, if one is mounted.
std::optional<fs::path> CgroupV2Root() {
  std::ifstream mounts("/proc/self/mounts");
  std::string device, point, type;
  std::string rest;
  while (mounts >> device >> point >> type) {
    std::getline(mounts, rest);
    if (type == "cgroup2") return fs::path(point);
  }
  return std::nullopt;
}

// A fresh cgroup under `parent` where `probe_file` exists afterwards, or why not.
Result<fs::path> MakeCgroup(const fs::path& parent, const char* probe_file) {
  std::error_code ec;
  fs::create_directories(parent, ec);
  const fs::path dir = parent / FreshCgroupName();
  if (!fs::create_directory(dir, ec) || ec) {
    return Unavailable(fmt::format("cannot create the cgroup {}: {}", dir.string(),
                                   ec ? ec.message() : "exists"));
  }
  if (!fs::exists(dir / probe_file)) {
    fs::remove(dir, ec);
    return Unavailable(fmt::format("{} has no {}", dir.string(), probe_file));
  }
  return dir;
}

Result<std::unique_ptr<Freezer>> CreateMethod(FreezeMethod method) {
  switch (method) {
    case FreezeMethod::kCgroupV1: {
      auto dir = MakeCgroup("/sys/fs/cgroup/freezer/kforge", "freezer.state");
      if (!dir) return std::unexpected(dir.error());
      return std::unique_ptr<Freezer>(new CgroupFreezer(method, *dir));
    }
    case FreezeMethod::kCgroupV2: {
      const auto root = CgroupV2Root();
      if (!root) return Unavailable("no cgroup2 hierarchy is mounted");
      auto dir = MakeCgroup(*root / "kforge", "cgroup.freeze");
      if (!dir) return std::unexpected(dir.error());
      return std::unique_ptr<Freezer>(new CgroupFreezer(method, *dir));
    }
    case FreezeMethod::kSignals:
      return std::unique_ptr<Freezer>(new SignalFreezer());
  }
  return Internal("unknown freeze method");
}

}  // namespace

std::string_view FreezeMethodName(FreezeMethod method) {
  switch (method) {
    case FreezeMethod::kCgroupV1:
      return "cgroup-v1";
    case FreezeMethod::kCgroupV2:
      return "cgroup-v2";
    case FreezeMethod::kSignals:
      return "signals";
  }
  return "unknown";
}

Result<FreezeMethod> ParseFreezeMethod(std::string_view name) {
  for (auto m : {FreezeMethod::kCgroupV1, FreezeMethod::kCgroupV2, FreezeMethod::kSignals}) {
    if (FreezeMethodName(m) == name) return m;
  }
  return InvalidArgument(fmt::format(
      "unknown freeze method '{}' (KFORGE_FREEZE): use cgroup-v1, cgroup-v2 or signals", name));
}

Result<std::unique_ptr<Freezer>> Freezer::Create(std::optional<FreezeMethod> method) {
  if (!method) {
    if (const char* forced = std::getenv("KFORGE_FREEZE"); forced != nullptr && *forced != '\0') {
      auto parsed = ParseFreezeMethod(forced);
      if (!parsed) return std::unexpected(parsed.error());
      method = *parsed;
    }
  }
  if (method) return CreateMethod(*method);
  // Which cgroup method works is probed once per process; signals always work.
  static const std::optional<FreezeMethod> best = [] () -> std::optional<FreezeMethod> {
    for (auto m : {FreezeMethod::kCgroupV1, FreezeMethod::kCgroupV2}) {
      if (CreateMethod(m)) return m;  // the probe cgroup is removed with its freezer
    }
    return std::nullopt;
  }();
  if (best) {
    auto made = CreateMethod(*best);
    if (made) return made;
  }
  return CreateMethod(FreezeMethod::kSignals);
}

}  // namespace kforge
