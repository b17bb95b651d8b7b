#include "kforge/core/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "bounded_buffer.h"
#include "child_exec.h"

namespace kforge {
namespace {

using Clock = ChildProcess::Clock;

// The one thread that forks children (see the header: death signals follow the forking thread).
class Spawner {
 public:
  static Spawner& Get() {
    static Spawner* spawner = new Spawner();  // never destroyed: children may outlive main()
    return *spawner;
  }

  // Forks on the spawner's thread; the child runs ExecChild. Returns the pid or -errno.
  pid_t Fork(const ProcessSpec& spec, const PreparedExec& exec, const ChildDescriptors& fds) {
    std::unique_lock lock(mu_);
    Request request{&spec, &exec, &fds, 0, false};
    queue_.push_back(&request);
    cv_.notify_all();
    cv_.wait(lock, [&] { return request.done; });
    return request.pid;
  }

 private:
  struct Request {
    const ProcessSpec* spec;
    const PreparedExec* exec;
    const ChildDescriptors* fds;
    pid_t pid;
    bool done;
  };

  Spawner() : thread_([this] { Loop(); }) { thread_.detach(); }

  void Loop() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return !queue_.empty(); });
      Request* r = queue_.front();
      queue_.pop_front();
      const pid_t pid = ::fork();
      if (pid == 0) ExecChild(*r->spec, *r->exec, *r->fds);
      r->pid = pid < 0 ? -errno : pid;
      if (pid > 0) ::setpgid(pid, pid);  // also done in the child; whichever runs first wins
      r->done = true;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request*> queue_;
  std::thread thread_;
};

int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

}  // namespace

struct ChildProcess::State {
  explicit State(std::size_t max_output) : out(max_output), err(max_output) {}

  mutable std::mutex mu;
  std::condition_variable cv;
  BoundedBuffer out;   // guarded by mu
  BoundedBuffer err;   // guarded by mu
  bool exited = false;  // guarded by mu
  bool killed = false;  // guarded by mu: we killed the group
  bool timed_out = false;  // guarded by mu
  bool cancelled = false;  // guarded by mu
  ProcessResult result;    // guarded by mu; complete once `exited`
  std::thread drain;
};

Result<std::unique_ptr<ChildProcess>> ChildProcess::Start(const ProcessSpec& spec,
                                                          std::stop_token stop) {
  if (spec.argv.empty()) return InvalidArgument("ChildProcess: empty argv");
  if (spec.result_pipe) return InvalidArgument("ChildProcess: pass descriptors in inherit_fds");
  if (spec.inherit_fds.size() > 16) return InvalidArgument("ChildProcess: at most 16 descriptors");
  if (!spec.stdin_data.empty()) return InvalidArgument("ChildProcess: stdin is /dev/null");
  const PreparedExec exec = PrepareExec(spec);
  auto out = MakePipe();
  auto err = MakePipe();
  auto exec_err = MakePipe();
  if (!out || !err || !exec_err) return IoError("cannot create pipes for a child process");
  ChildDescriptors fds{.stdin_fd = -1,
                       .stdout_fd = out->write,
                       .stderr_fd = err->write,
                       .from_fd3 = spec.inherit_fds,
                       .exec_error_fd = exec_err->write};
  const auto start = Clock::now();
  const pid_t pid = Spawner::Get().Fork(spec, exec, fds);
  CloseFd(out->write);
  CloseFd(err->write);
  CloseFd(exec_err->write);
  if (pid < 0) {
    CloseFd(out->read);
    CloseFd(err->read);
    CloseFd(exec_err->read);
    return IoError(fmt::format("fork failed: {}", std::strerror(-pid)));
  }
  int exec_errno = 0;
  const bool exec_failed =
      ::read(exec_err->read, &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno);
  CloseFd(exec_err->read);
  if (exec_failed) {
    ::waitpid(pid, nullptr, 0);
    CloseFd(out->read);
    CloseFd(err->read);
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
  const int pidfd = PidfdOpen(pid);
  if (pidfd < 0) {
    KillGroup(pid);
    ::waitpid(pid, nullptr, 0);
    CloseFd(out->read);
    CloseFd(err->read);
    return IoError(fmt::format("pidfd_open failed: {}", std::strerror(errno)));
  }
  auto state = std::make_shared<State>(spec.max_output_bytes);
  state->result.state = ProcessState::kRunning;
  const bool has_timeout = spec.timeout.count() > 0;
  const auto timeout_at = start + spec.timeout;
  std::shared_ptr<std::atomic<std::int64_t>> movable = spec.deadline;
  std::shared_ptr<std::atomic<pid_t>> running_pid = spec.running_pid;
  if (running_pid) running_pid->store(pid);
  state->drain = std::thread([state, pid, pidfd, out_fd = out->read, err_fd = err->read,
                              has_timeout, timeout_at, movable, running_pid, start, stop,
                              quota = FolderQuotaWatch(spec.folder_quota, start)]() mutable {
    std::array<char, 65536> chunk{};
    bool exited = false;
    Clock::time_point exited_at{};
    int wait_status = 0;
    rusage usage{};
    while (true) {
      const bool any_open = out_fd >= 0 || err_fd >= 0;
      const auto now = Clock::now();
      if (exited && (!any_open || now - exited_at > std::chrono::milliseconds(300))) break;
      bool past = has_timeout && now >= timeout_at;
      if (movable) {
        const std::int64_t ns = movable->load();
        past = ns != 0 && now.time_since_epoch() >= std::chrono::nanoseconds(ns);
      }
      if (!exited && (past || stop.stop_requested())) {
        bool first = false;
        {
          std::lock_guard lock(state->mu);
          first = !state->killed;
          if (first) {
            state->killed = true;
            state->timed_out = true;
            state->cancelled = stop.stop_requested();
          }
        }
        if (first) KillGroup(pid);
      }
      if (!exited) {
        if (std::string over = quota.Poll(now); !over.empty()) {
          bool first = false;
          {
            std::lock_guard lock(state->mu);
            first = !state->killed;
            if (first) {
              state->killed = true;
              state->result.limit_exceeded = std::move(over);
            }
          }
          if (first) KillGroup(pid);
        }
      }
      std::array<pollfd, 3> polled{pollfd{out_fd, POLLIN, 0}, pollfd{err_fd, POLLIN, 0},
                                pollfd{exited ? -1 : pidfd, POLLIN, 0}};
      ::poll(polled.data(), polled.size(), 20);
      for (int i = 0; i < 2; ++i) {
        pollfd& p = polled[static_cast<std::size_t>(i)];
        if (p.fd < 0 || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        const ssize_t n = ::read(p.fd, chunk.data(), chunk.size());
        if (n <= 0) {
          CloseFd(i == 0 ? out_fd : err_fd);
          continue;
        }
        std::lock_guard lock(state->mu);
        (i == 0 ? state->out : state->err).Append(chunk.data(), static_cast<std::size_t>(n));
      }
      if (!exited && ::wait4(pid, &wait_status, WNOHANG, &usage) == pid) {
        exited = true;
        exited_at = Clock::now();
      }
    }
    KillGroup(pid);  // leftovers: background processes, forks of threads
    if (running_pid) running_pid->store(0);
    CloseFd(out_fd);
    CloseFd(err_fd);
    std::lock_guard lock(state->mu);
    ProcessResult& r = state->result;
    r.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    r.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                    static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
    r.max_rss_kib = usage.ru_maxrss;
    if (WIFEXITED(wait_status)) r.exit_code = WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status)) r.term_signal = WTERMSIG(wait_status);
    r.cancelled = state->cancelled;
    if (state->timed_out) {
      r.state = ProcessState::kTimedOut;
    } else if (WIFEXITED(wait_status) && r.exit_code == 0) {
      r.state = ProcessState::kDone;
    } else {
      r.state = ProcessState::kFailed;
    }
    r.stdout_text = state->out.Text();
    r.stderr_text = state->err.Text();
    state->exited = true;
    state->cv.notify_all();
  });
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, pidfd, std::move(state)));
}

ChildProcess::ChildProcess(pid_t pid, int pidfd, std::shared_ptr<State> state)
    : pid_(pid), pidfd_(pidfd), state_(std::move(state)) {}

ChildProcess::~ChildProcess() {
  if (running()) Kill();
  if (state_->drain.joinable()) state_->drain.join();
  if (pidfd_ >= 0) ::close(pidfd_);
}

bool ChildProcess::SignalGroup(int sig) { return ::kill(-pid_, sig) == 0; }

bool ChildProcess::running() const {
  std::lock_guard lock(state_->mu);
  return !state_->exited;
}

std::optional<ProcessResult> ChildProcess::WaitUntil(Clock::time_point deadline) {
  std::unique_lock lock(state_->mu);
  if (!state_->cv.wait_until(lock, deadline, [&] { return state_->exited; })) return std::nullopt;
  return state_->result;
}

ProcessResult ChildProcess::Kill(bool timed_out) {
  {
    std::lock_guard lock(state_->mu);
    if (!state_->exited) {
      state_->killed = true;
      state_->timed_out = state_->timed_out || timed_out;
    }
  }
  KillGroup(pid_);
  std::unique_lock lock(state_->mu);
  state_->cv.wait(lock, [&] { return state_->exited; });
  return state_->result;
}

std::string ChildProcess::StderrSoFar() const {
  std::lock_guard lock(state_->mu);
  return state_->err.Text();
}

}  // namespace kforge
