#include "kforge/core/sandbox.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <set>

#include <fmt/ranges.h>

extern char** environ;

namespace kforge {
namespace {

namespace fs = std::filesystem;


bool CanDropPrivileges(const SandboxPolicy& policy) {
  return policy.drop_privileges && ::geteuid() == 0;
}

void ApplyUser(ProcessSpec& spec, const SandboxPolicy& policy) {
  if (CanDropPrivileges(policy)) {
    spec.uid = kUnprivilegedUid;
    spec.gid = kUnprivilegedUid;
  }
}

void SetTmpdir(ProcessSpec& spec, const fs::path& scratch) {
  if (spec.env.empty()) {
    for (char** e = environ; *e != nullptr; ++e) spec.env.emplace_back(*e);
  }
  std::erase_if(spec.env, [](const std::string& e) { return e.starts_with("TMPDIR="); });
  spec.env.push_back("TMPDIR=" + scratch.string());
}

class NoSandbox : public Sandbox {
 public:
  ProcessSpec Wrap(ProcessSpec spec, const SandboxPolicy& policy) const override {
    ApplyUser(spec, policy);
    if (!policy.scratch_dir.empty()) SetTmpdir(spec, policy.scratch_dir);
    return spec;
  }
  Isolation isolation(const SandboxPolicy& policy) const override {
    Isolation iso;
    iso.mechanism = "none";
    iso.unprivileged_user = CanDropPrivileges(policy) || ::geteuid() != 0;
    return iso;
  }
};

// Appends bwrap arguments that show `path` read-only at its own place in a view over an empty
// root: every symbolic link on the way is recreated (and followed), and the real location is
// bound. `made` remembers what was already created, so shared prefixes are made once.
void AppendViewPath(std::vector<std::string>& argv, const fs::path& path,
                    std::set<std::string>& made, int depth = 0) {
  if (depth > 16 || !path.is_absolute()) return;  // a symlink loop, or nothing to show
  // `current` is always a real location (no symbolic link in it); once it lies in a bound folder,
  // the rest is shown as the host has it.
  auto covered = [&](const fs::path& real) {
    for (fs::path p = real; !p.empty(); p = p.parent_path()) {
      if (made.contains("bind:" + p.string())) return true;
      if (p == p.root_path()) break;
    }
    return false;
  };
  fs::path current = "/";
  const fs::path normal = path.lexically_normal();
  for (auto it = normal.begin(); it != normal.end(); ++it) {
    if (*it == "/" || it->empty()) continue;
    const fs::path next = current / *it;
    if (covered(next)) return;
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(next, ec))) {
      const fs::path target = fs::read_symlink(next, ec);
      if (ec) return;
      if (made.insert(next.string()).second) {
        argv.insert(argv.end(), {"--symlink", target.string(), next.string()});
      }
      fs::path resolved = target.is_absolute() ? target : current / target;
      for (auto rest = std::next(it); rest != normal.end(); ++rest) resolved /= *rest;
      AppendViewPath(argv, resolved, made, depth + 1);
      return;
    }
    if (!fs::exists(next, ec)) return;  // nothing to show
    current = next;
  }
  if (covered(current) || current == current.root_path()) return;
  made.insert("bind:" + current.string());
  argv.insert(argv.end(), {"--ro-bind", current.string(), current.string()});
}

// Shallow folders first, so that a folder's bind never covers one made inside it before.
std::vector<fs::path> ShallowFirst(std::vector<fs::path> paths) {
  std::stable_sort(paths.begin(), paths.end(), [](const fs::path& a, const fs::path& b) {
    return std::distance(a.begin(), a.end()) < std::distance(b.begin(), b.end());
  });
  return paths;
}

class BubblewrapSandbox : public Sandbox {
 public:
  BubblewrapSandbox(std::string bwrap, bool sized_tmpfs)
      : bwrap_(std::move(bwrap)), sized_tmpfs_(sized_tmpfs) {}

  ProcessSpec Wrap(ProcessSpec spec, const SandboxPolicy& policy) const override {
    std::vector<std::string> argv = {bwrap_};
    std::set<std::string> made;
    if (policy.show_host_root) {
      argv.insert(argv.end(), {"--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc",
                               "/proc"});
    } else {
      // An empty root: bwrap's own tmpfs, made read-only at the end.
      argv.insert(argv.end(), {"--dev", "/dev", "--proc", "/proc"});
    }
    auto tmpfs = [&](std::uint64_t bytes, const char* where) {
      if (bytes > 0 && sized_tmpfs_) argv.insert(argv.end(), {"--size", std::to_string(bytes)});
      argv.insert(argv.end(), {"--tmpfs", where});
    };
    tmpfs(policy.tmp_bytes, "/tmp");
    tmpfs(policy.shm_bytes, "/dev/shm");
    argv.insert(argv.end(), {"--unshare-pid", "--unshare-ipc", "--unshare-uts",
                             "--die-with-parent"});
    if (!policy.allow_network) argv.push_back("--unshare-net");
    // Order matters: later mounts cover earlier ones. Visible folders first (they may sit under
    // the private /tmp), then the hidden ones inside them, then the writable scratch folder.
    if (policy.show_host_root) {
      for (const auto& p : policy.visible_paths) {
        argv.insert(argv.end(), {"--ro-bind", p.string(), p.string()});
      }
    } else {
      for (const auto& p : ShallowFirst(policy.visible_paths)) AppendViewPath(argv, p, made);
    }
    for (const auto& p : policy.hidden_paths) {
      argv.insert(argv.end(), {"--tmpfs", p.string()});
    }
    if (!policy.scratch_dir.empty()) {
      argv.insert(argv.end(), {"--bind", policy.scratch_dir.string(), policy.scratch_dir.string()});
      if (spec.cwd.empty()) spec.cwd = policy.scratch_dir;
    }
    if (!policy.show_host_root) argv.insert(argv.end(), {"--remount-ro", "/"});
    if (!spec.cwd.empty()) {
      argv.insert(argv.end(), {"--chdir", spec.cwd.string()});
      spec.cwd.clear();  // bwrap changes directory inside the new mount namespace
    }
    argv.push_back("--");
    argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
    spec.argv = std::move(argv);
    ApplyUser(spec, policy);
    if (!policy.scratch_dir.empty()) SetTmpdir(spec, policy.scratch_dir);
    return spec;
  }

  // bubblewrap, like a shell, reports a child killed by signal N as its own exit code 128 + N.
  void UnwrapResult(ProcessResult& result) const override {
    if (result.term_signal == 0 && result.exit_code > 128 && result.exit_code < 128 + 65) {
      result.term_signal = result.exit_code - 128;
      result.state = ProcessState::kFailed;
    }
  }

  Isolation isolation(const SandboxPolicy& policy) const override {
    Isolation iso;
    iso.mechanism = "bubblewrap";
    iso.network_isolated = !policy.allow_network;
    iso.filesystem_read_only = true;
    iso.pid_namespace = true;
    iso.unprivileged_user = CanDropPrivileges(policy) || ::geteuid() != 0;
    iso.restricted_view = !policy.show_host_root;
    iso.tmp_bytes = sized_tmpfs_ ? policy.tmp_bytes : 0;
    iso.shm_bytes = sized_tmpfs_ ? policy.shm_bytes : 0;
    return iso;
  }

 private:
  std::string bwrap_;
  bool sized_tmpfs_;  // this bwrap knows --size (0.6 and later)
};

// True when bwrap can start a trivial child here with the options Wrap() uses.
bool BubblewrapWorks(const std::string& bwrap) {
  ProcessSpec probe;
  probe.argv = {bwrap, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc",
                "--tmpfs", "/tmp", "--unshare-pid", "--unshare-net", "--die-with-parent",
                "--", "true"};
  probe.timeout = std::chrono::seconds(10);
  if (::geteuid() == 0) {
    probe.uid = kUnprivilegedUid;
    probe.gid = kUnprivilegedUid;
  }
  auto r = RunProcess(probe);
  if (!r || r->state != ProcessState::kDone) {
    spdlog::warn("bubblewrap is installed but does not work here ({}); running without it",
                 r ? r->stderr_text : r.error().message);
    return false;
  }
  return true;
}

// True when this bwrap can size a tmpfs (--size, bubblewrap 0.6 and later).
bool BubblewrapSizesTmpfs(const std::string& bwrap) {
  ProcessSpec probe;
  probe.argv = {bwrap, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc",
                "--size", "1048576", "--tmpfs", "/tmp", "--unshare-pid", "--unshare-net",
                "--die-with-parent", "--", "true"};
  probe.timeout = std::chrono::seconds(10);
  if (::geteuid() == 0) {
    probe.uid = kUnprivilegedUid;
    probe.gid = kUnprivilegedUid;
  }
  auto r = RunProcess(probe);
  if (!r || r->state != ProcessState::kDone) {
    spdlog::warn(
        "this bubblewrap cannot size a tmpfs (--size needs bubblewrap 0.6): the sandbox's /tmp "
        "and /dev/shm have no size limit");
    return false;
  }
  return true;
}

}  // namespace

std::string Isolation::Describe() const {
  std::vector<std::string> parts;
  parts.emplace_back(network_isolated ? "no network" : "network allowed");
  parts.emplace_back(filesystem_read_only ? "read-only fs except scratch" : "fs writable");
  if (pid_namespace) parts.emplace_back("own pid namespace");
  parts.emplace_back(unprivileged_user ? "unprivileged user" : "same user as kforge");
  if (restricted_view) parts.emplace_back("only the listed paths of the host shown");
  if (tmp_bytes > 0 || shm_bytes > 0) {
    parts.emplace_back(fmt::format("/tmp {} MiB, /dev/shm {} MiB", tmp_bytes >> 20,
                                   shm_bytes >> 20));
  }
  return fmt::format("{}: {}", mechanism, fmt::join(parts, ", "));
}

std::shared_ptr<const Sandbox> DefaultSandbox() {
  static std::once_flag once;
  static std::shared_ptr<const Sandbox> sandbox;
  std::call_once(once, [] {
    const char* forced = std::getenv("KFORGE_SANDBOX");
    std::string bwrap = FindProgram("bwrap");
    if ((forced == nullptr || std::string(forced) != "none") && !bwrap.empty() &&
        BubblewrapWorks(bwrap)) {
      sandbox = std::make_shared<BubblewrapSandbox>(bwrap, BubblewrapSizesTmpfs(bwrap));
    } else {
      sandbox = std::make_shared<NoSandbox>();
    }
  });
  return sandbox;
}

}  // namespace kforge
