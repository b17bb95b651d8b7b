#include "kforge/core/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;

// Keeps the first and last `limit / 2` bytes of a stream and counts what was cut between them.
class BoundedBuffer {
 public:
  explicit BoundedBuffer(std::size_t limit) : limit_(limit) {}

  void Append(const char* data, std::size_t n) {
    std::size_t half = limit_ / 2;
    while (n > 0 && head_.size() < half) {
      head_.push_back(*data++);
      --n;
    }
    tail_.append(data, n);
    if (tail_.size() > 2 * half) {
      std::size_t drop = tail_.size() - half;
      cut_ += drop;
      tail_.erase(0, drop);
    }
  }

  std::string Take() {
    if (cut_ == 0) return head_ + tail_;
    return fmt::format("{}\n[... {} bytes cut ...]\n{}", head_, cut_, tail_);
  }

 private:
  std::size_t limit_;
  std::string head_;
  std::string tail_;
  std::size_t cut_ = 0;
};

struct Pipe {
  int read = -1;
  int write = -1;
};

Result<Pipe> MakePipe() {
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
    return IoError(fmt::format("pipe2 failed: {}", std::strerror(errno)));
  }
  return Pipe{fds[0], fds[1]};
}

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void SetLimit(int resource, const std::optional<std::uint64_t>& value) {
  if (!value) return;
  rlimit limit{static_cast<rlim_t>(*value), static_cast<rlim_t>(*value)};
  ::setrlimit(resource, &limit);
}

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void ExecChild(const ProcessSpec& spec, char* const* argv, char* const* envp,
                            const Pipe& out, const Pipe& err, const Pipe& result, const Pipe& in,
                            int exec_err_fd) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (in.read >= 0) {
    ::dup2(in.read, STDIN_FILENO);
  } else if (devnull >= 0) {
    ::dup2(devnull, STDIN_FILENO);
  }
  ::dup2(out.write, STDOUT_FILENO);
  ::dup2(err.write, STDERR_FILENO);
  if (result.write >= 0) {
    ::dup2(result.write, kResultFd);
  } else {
    ::dup2(devnull, kResultFd);  // keep fd 3 taken so nothing mistakes a later file for it
  }
  // exec_err_fd is close-on-exec; move it above kResultFd so dup2 above cannot clobber it.
  ::close_range(kResultFd + 1, ~0U, CLOSE_RANGE_CLOEXEC);
  SetLimit(RLIMIT_AS, spec.limits.address_space_bytes);
  SetLimit(RLIMIT_CPU, spec.limits.cpu_seconds);
  SetLimit(RLIMIT_NPROC, spec.limits.processes);
  SetLimit(RLIMIT_FSIZE, spec.limits.file_size_bytes);
  SetLimit(RLIMIT_NOFILE, spec.limits.open_files);
  if (spec.gid) {
    ::setgroups(0, nullptr);
    if (::setgid(*spec.gid) != 0) goto fail;
  }
  if (spec.uid && ::setuid(*spec.uid) != 0) goto fail;
  if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) goto fail;
  ::execvpe(argv[0], argv, envp);
fail:
  int code = errno;
  ssize_t ignored = ::write(exec_err_fd, &code, sizeof(code));
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

void KillGroup(pid_t pgid) {
  // Repeat: a fork bomb can add members between two kills.
  for (int i = 0; i < 20; ++i) {
    if (::kill(-pgid, SIGKILL) != 0 && errno == ESRCH) return;
    ::usleep(1000);
  }
}

}  // namespace

std::string_view ProcessStateName(ProcessState state) {
  switch (state) {
    case ProcessState::kPending:
      return "pending";
    case ProcessState::kRunning:
      return "running";
    case ProcessState::kDone:
      return "done";
    case ProcessState::kFailed:
      return "failed";
    case ProcessState::kTimedOut:
      return "timed_out";
  }
  return "unknown";
}

std::string FindProgram(std::string_view name) {
  if (name.find('/') != std::string_view::npos) {
    return ::access(std::string(name).c_str(), X_OK) == 0 ? std::string(name) : std::string();
  }
  const char* path = std::getenv("PATH");
  if (path == nullptr) return {};
  std::string_view rest(path);
  while (!rest.empty()) {
    std::size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (dir.empty()) continue;
    std::string candidate = fmt::format("{}/{}", dir, name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

Result<ProcessResult> RunProcess(const ProcessSpec& spec, std::stop_token stop) {
  if (spec.argv.empty()) return InvalidArgument("RunProcess: empty argv");

  // Everything the child needs is prepared before fork (no allocation after fork).
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  if (spec.env.empty()) {
    for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  } else {
    for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  }
  envp.push_back(nullptr);

  auto out = MakePipe();
  auto err = MakePipe();
  auto exec_err = MakePipe();
  if (!out || !err || !exec_err) return IoError("cannot create pipes for a child process");
  Pipe result;
  if (spec.result_pipe) {
    auto r = MakePipe();
    if (!r) return std::unexpected(r.error());
    result = *r;
  }
  Pipe in;
  if (!spec.stdin_data.empty()) {
    if (spec.stdin_data.size() > PIPE_BUF)
      return InvalidArgument("RunProcess: stdin_data too long");
    auto r = MakePipe();
    if (!r) return std::unexpected(r.error());
    in = *r;
    // Fits the pipe's buffer: written now, read by the child whenever it likes.
    if (::write(in.write, spec.stdin_data.data(), spec.stdin_data.size()) !=
        static_cast<ssize_t>(spec.stdin_data.size())) {
      return IoError(fmt::format("cannot write a child's stdin: {}", std::strerror(errno)));
    }
    CloseFd(in.write);
  }

  ProcessResult res;
  auto start = Clock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    CloseFd(in.read);
    return IoError(fmt::format("fork failed: {}", std::strerror(errno)));
  }
  if (pid == 0) ExecChild(spec, argv.data(), envp.data(), *out, *err, result, in, exec_err->write);
  CloseFd(in.read);
  ::setpgid(pid, pid);  // also done in the child; whichever runs first wins the race
  res.state = ProcessState::kRunning;
  if (spec.running_pid) spec.running_pid->store(pid);
  CloseFd(out->write);
  CloseFd(err->write);
  CloseFd(result.write);
  CloseFd(exec_err->write);

  int exec_errno = 0;
  if (::read(exec_err->read, &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno)) {
    CloseFd(exec_err->read);
    ::waitpid(pid, nullptr, 0);
    if (spec.running_pid) spec.running_pid->store(0);
    CloseFd(out->read);
    CloseFd(err->read);
    CloseFd(result.read);
    // Permission denied after a user switch: the program is usually fine, but a folder on its
    // path is private to its owner (a pyenv under /root, mode 0700), which deserves saying.
    const std::string hint =
        exec_errno == EACCES && spec.uid
            ? fmt::format(
                  " (it runs as uid {}: the program and every folder above it must be "
                  "readable and searchable by that user)",
                  *spec.uid)
            : "";
    return Unavailable(
        fmt::format("cannot start '{}': {}{}", spec.argv[0], std::strerror(exec_errno), hint));
  }
  CloseFd(exec_err->read);

  BoundedBuffer out_buf(spec.max_output_bytes);
  BoundedBuffer err_buf(spec.max_output_bytes);
  constexpr std::size_t kMaxResult = 64u << 20;
  std::array<char, 65536> chunk{};
  const bool has_deadline = spec.timeout.count() > 0;
  const auto deadline = start + spec.timeout;
  bool exited = false;
  bool killed = false;
  bool over_limit = false;
  auto next_quota_check = start;
  int wait_status = 0;
  rusage usage{};
  Clock::time_point exited_at{};

  while (true) {
    std::array<pollfd, 3> fds{pollfd{out->read, POLLIN, 0}, pollfd{err->read, POLLIN, 0},
                              pollfd{result.read, POLLIN, 0}};
    bool any_open = out->read >= 0 || err->read >= 0 || result.read >= 0;
    if (!exited) {
      pid_t w = ::wait4(pid, &wait_status, WNOHANG, &usage);
      if (w == pid) {
        exited = true;
        exited_at = Clock::now();
      }
    }
    auto now = Clock::now();
    // After the child exits, give its pipes a short grace to drain, then stop listening: a
    // descendant that kept them open must not hold us (it is killed below).
    if (exited && (!any_open || now - exited_at > std::chrono::milliseconds(300))) break;
    bool past_deadline = has_deadline && now >= deadline;
    if (spec.deadline) {
      const std::int64_t ns = spec.deadline->load();
      past_deadline = ns != 0 && now.time_since_epoch() >= std::chrono::nanoseconds(ns);
    }
    if (!exited && !killed && (stop.stop_requested() || past_deadline)) {
      res.cancelled = stop.stop_requested();
      KillGroup(pid);
      killed = true;
    }
    if (!exited && !killed && !over_limit && spec.folder_quota && now >= next_quota_check) {
      const FolderQuota& quota = *spec.folder_quota;
      const FolderUse use = MeasureFolder(quota.folder, quota.max_entries);
      const auto walked = Clock::now();
      // A slow walk (many files) is repeated less often: at most a tenth of the time walking.
      next_quota_check = walked + std::max<Clock::duration>(std::chrono::milliseconds(100),
                                                            (walked - now) * 10);
      const std::uint64_t max_bytes = quota.max_bytes.load();
      if ((max_bytes > 0 && use.bytes > max_bytes) || use.entries > quota.max_entries) {
        res.limit_exceeded =
            use.entries > quota.max_entries
                ? fmt::format("the scratch folder {} held more than {} files and folders, its "
                              "limit",
                              quota.folder.string(), quota.max_entries)
                : fmt::format("the scratch folder {} held {}, more than its quota of {}",
                              quota.folder.string(), Size(use.bytes), Size(max_bytes));
        KillGroup(pid);
        over_limit = true;
      }
    }
    int poll_ms = 20;
    if (any_open) {
      ::poll(fds.data(), fds.size(), poll_ms);
    } else {
      ::usleep(poll_ms * 1000);
    }
    for (auto& p : fds) {
      if (p.fd < 0 || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      ssize_t n = ::read(p.fd, chunk.data(), chunk.size());
      if (n <= 0) {
        if (p.fd == out->read)
          CloseFd(out->read);
        else if (p.fd == err->read)
          CloseFd(err->read);
        else
          CloseFd(result.read);
        continue;
      }
      auto size = static_cast<std::size_t>(n);
      if (p.fd == out->read)
        out_buf.Append(chunk.data(), size);
      else if (p.fd == err->read)
        err_buf.Append(chunk.data(), size);
      else if (res.result_text.size() < kMaxResult)
        res.result_text.append(chunk.data(), size);
    }
  }
  KillGroup(pid);  // leftovers: background processes, threads' forks
  if (spec.running_pid) spec.running_pid->store(0);
  CloseFd(out->read);
  CloseFd(err->read);
  CloseFd(result.read);

  res.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  res.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                    static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  res.max_rss_kib = usage.ru_maxrss;
  res.stdout_text = out_buf.Take();
  res.stderr_text = err_buf.Take();
  if (WIFEXITED(wait_status)) res.exit_code = WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) res.term_signal = WTERMSIG(wait_status);
  if (killed) {
    res.state = ProcessState::kTimedOut;
  } else if (WIFEXITED(wait_status) && res.exit_code == 0) {
    res.state = ProcessState::kDone;
  } else {
    res.state = ProcessState::kFailed;
  }
  return res;
}

}  // namespace kforge
