#include "child_exec.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

extern char** environ;

namespace kforge {
namespace {

// Descriptors at or above this number are out of the way of the ones the child puts in place.
constexpr int kParkedFdBase = 100;

void SetLimit(int resource, const std::optional<std::uint64_t>& value) {
  if (!value) return;
  rlimit limit{static_cast<rlim_t>(*value), static_cast<rlim_t>(*value)};
  ::setrlimit(resource, &limit);
}

// A copy of `fd` at kParkedFdBase or above (close-on-exec), so that putting other descriptors in
// place cannot overwrite it; -1 stays -1.
int Park(int fd) { return fd < 0 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, kParkedFdBase); }

[[noreturn]] void Fail(int exec_error_fd) {
  int code = errno;
  ssize_t ignored = ::write(exec_error_fd, &code, sizeof(code));
  (void)ignored;
  ::_exit(127);
}

// What `folder` holds: allocated bytes of its files (st_blocks, so sparse files count what they
// use) and its number of entries. Unreadable subfolders are skipped (KForge's user reads them
// when it is root; otherwise the child's own permissions keep it out of what it wrote there).
struct FolderUse {
  std::uint64_t bytes = 0;
  std::uint64_t entries = 0;
};

FolderUse MeasureFolder(const std::filesystem::path& folder, std::uint64_t max_entries) {
  FolderUse use;
  std::error_code ec;
  auto it = std::filesystem::recursive_directory_iterator(
      folder, std::filesystem::directory_options::skip_permission_denied, ec);
  for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st{};
    if (::lstat(it->path().c_str(), &st) == 0) {
      use.bytes += static_cast<std::uint64_t>(st.st_blocks) * 512;
    }
    if (++use.entries > max_entries) break;
  }
  return use;
}

std::string Size(std::uint64_t bytes) {
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  return mib >= 1024 ? fmt::format("{:.2f} GiB", mib / 1024) : fmt::format("{:.1f} MiB", mib);
}

}  // namespace

std::string FolderQuotaWatch::Poll(std::chrono::steady_clock::time_point now) {
  if (!quota_ || now < next_) return "";
  const FolderQuota& quota = *quota_;
  const FolderUse use = MeasureFolder(quota.folder, quota.max_entries);
  const auto walked = std::chrono::steady_clock::now();
  next_ = walked + std::max<std::chrono::steady_clock::duration>(std::chrono::milliseconds(100),
                                                                 (walked - now) * 10);
  const std::uint64_t max_bytes = quota.max_bytes.load();
  if (use.entries > quota.max_entries) {
    return fmt::format("the scratch folder {} held more than {} files and folders, its limit",
                       quota.folder.string(), quota.max_entries);
  }
  if (max_bytes > 0 && use.bytes > max_bytes) {
    return fmt::format("the scratch folder {} held {}, more than its quota of {}",
                       quota.folder.string(), Size(use.bytes), Size(max_bytes));
  }
  return "";
}

Result<Pipe> MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return IoError(fmt::format("pipe2 failed: {}", std::strerror(errno)));
  }
  return Pipe{fds[0], fds[1]};
}

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

PreparedExec PrepareExec(const ProcessSpec& spec) {
  PreparedExec p;
  for (const auto& a : spec.argv) p.argv.push_back(const_cast<char*>(a.c_str()));
  p.argv.push_back(nullptr);
  if (spec.env.empty()) {
    for (char** e = environ; *e != nullptr; ++e) p.envp.push_back(*e);
  } else {
    for (const auto& e : spec.env) p.envp.push_back(const_cast<char*>(e.c_str()));
  }
  p.envp.push_back(nullptr);
  return p;
}

void ExecChild(const ProcessSpec& spec, const PreparedExec& exec, const ChildDescriptors& fds) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int error_fd = Park(fds.exec_error_fd);
  // Join the cgroup first, before anything else runs: every process the child ever starts is
  // born inside it (the freezer relies on that).
  if (!spec.cgroup_procs.empty()) {
    const int cg = ::open(spec.cgroup_procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (cg < 0 || ::write(cg, "0\n", 2) != 2) Fail(error_fd);
    ::close(cg);
  }
  int devnull = ::open("/dev/null", O_RDONLY);
  const int in = fds.stdin_fd >= 0 ? Park(fds.stdin_fd) : Park(devnull);
  const int out = Park(fds.stdout_fd);
  const int err = Park(fds.stderr_fd);
  // Parked one after another, so none of them can land on a number another still needs.
  int parked[16];
  const int extra = static_cast<int>(fds.from_fd3.size() < 16 ? fds.from_fd3.size() : 16);
  for (int i = 0; i < extra; ++i) parked[i] = Park(fds.from_fd3[static_cast<std::size_t>(i)]);
  if (in >= 0) ::dup2(in, STDIN_FILENO);
  if (out >= 0) ::dup2(out, STDOUT_FILENO);
  if (err >= 0) ::dup2(err, STDERR_FILENO);
  if (extra == 0) {
    ::dup2(devnull, kResultFd);
  } else {
    for (int i = 0; i < extra; ++i) ::dup2(parked[i], kResultFd + i);
  }
  // Nothing else crosses the exec: every descriptor above the ones put in place is close-on-exec.
  const int first_free = kResultFd + (extra == 0 ? 1 : extra);
  ::close_range(static_cast<unsigned>(first_free), ~0U, CLOSE_RANGE_CLOEXEC);
  SetLimit(RLIMIT_AS, spec.limits.address_space_bytes);
  SetLimit(RLIMIT_CPU, spec.limits.cpu_seconds);
  SetLimit(RLIMIT_NPROC, spec.limits.processes);
  SetLimit(RLIMIT_FSIZE, spec.limits.file_size_bytes);
  SetLimit(RLIMIT_NOFILE, spec.limits.open_files);
  if (spec.gid) {
    ::setgroups(0, nullptr);
    if (::setgid(*spec.gid) != 0) Fail(error_fd);
  }
  if (spec.uid && ::setuid(*spec.uid) != 0) Fail(error_fd);
  if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) Fail(error_fd);
  ::execvpe(exec.argv[0], exec.argv.data(), exec.envp.data());
  Fail(error_fd);
}

void KillGroup(pid_t pgid) {
  for (int i = 0; i < 20; ++i) {
    if (::kill(-pgid, SIGKILL) != 0 && errno == ESRCH) return;
    ::usleep(1000);
  }
}

}  // namespace kforge
