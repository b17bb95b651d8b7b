#include "kforge/core/sandbox.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

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

class BubblewrapSandbox : public Sandbox {
 public:
  explicit BubblewrapSandbox(std::string bwrap) : bwrap_(std::move(bwrap)) {}

  ProcessSpec Wrap(ProcessSpec spec, const SandboxPolicy& policy) const override {
    std::vector<std::string> argv = {bwrap_,        "--ro-bind", "/",     "/",
                                     "--dev-bind",  "/dev",      "/dev",  "--proc",
                                     "/proc",       "--tmpfs",   "/tmp",  "--tmpfs",
                                     "/dev/shm",    "--unshare-pid", "--unshare-ipc",
                                     "--unshare-uts", "--die-with-parent"};
    if (!policy.allow_network) argv.push_back("--unshare-net");
    // Order matters: later mounts cover earlier ones. Visible folders first (they may sit under
    // the private /tmp), then the hidden ones inside them, then the writable scratch folder.
    for (const auto& p : policy.visible_paths) {
      argv.insert(argv.end(), {"--ro-bind", p.string(), p.string()});
    }
    for (const auto& p : policy.hidden_paths) {
      argv.insert(argv.end(), {"--tmpfs", p.string()});
    }
    if (!policy.scratch_dir.empty()) {
      argv.insert(argv.end(), {"--bind", policy.scratch_dir.string(), policy.scratch_dir.string()});
      if (spec.cwd.empty()) spec.cwd = policy.scratch_dir;
    }
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
    return iso;
  }

 private:
  std::string bwrap_;
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

}  // namespace

std::string Isolation::Describe() const {
  std::vector<std::string> parts;
  parts.emplace_back(network_isolated ? "no network" : "network allowed");
  parts.emplace_back(filesystem_read_only ? "read-only fs except scratch" : "fs writable");
  if (pid_namespace) parts.emplace_back("own pid namespace");
  parts.emplace_back(unprivileged_user ? "unprivileged user" : "same user as kforge");
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
      sandbox = std::make_shared<BubblewrapSandbox>(bwrap);
    } else {
      sandbox = std::make_shared<NoSandbox>();
    }
  });
  return sandbox;
}

}  // namespace kforge
