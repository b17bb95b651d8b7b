#include "kforge/core/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "bounded_buffer.h"
#include "child_exec.h"

extern char** environ;

namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;

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

  if (!spec.inherit_fds.empty()) {
    return InvalidArgument("RunProcess: inherit_fds is for ChildProcess");
  }
  // Everything the child needs is prepared before fork (no allocation after fork).
  const PreparedExec exec = PrepareExec(spec);

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

  ChildDescriptors descriptors{.stdin_fd = in.read,
                               .stdout_fd = out->write,
                               .stderr_fd = err->write,
                               .from_fd3 = {},
                               .exec_error_fd = exec_err->write};
  if (result.write >= 0) descriptors.from_fd3.push_back(result.write);
  ProcessResult res;
  auto start = Clock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    CloseFd(in.read);
    return IoError(fmt::format("fork failed: {}", std::strerror(errno)));
  }
  if (pid == 0) ExecChild(spec, exec, descriptors);
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
  bool over_limit = false;  // killed for its folder quota (res.limit_exceeded)
  FolderQuotaWatch quota(spec.folder_quota, start);
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
    if (!exited && !killed && !over_limit) {
      if (std::string over = quota.Poll(now); !over.empty()) {
        res.limit_exceeded = std::move(over);
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
