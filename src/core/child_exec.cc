#include "child_exec.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

}  // namespace

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
