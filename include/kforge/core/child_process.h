// An interactive child process: started with descriptors of the caller at 3, 4, ... (a channel
// socket, a shared-memory file), running while the caller talks to it, then waited for or
// killed. RunProcess (subprocess.h) is the one-shot form; this is the one a judge drives.
//
// The child gets what RunProcess gives (ProcessSpec: environment, limits, user, working folder,
// its own process group, SIGKILL when KForge dies) plus ProcessSpec::inherit_fds and
// ProcessSpec::cgroup_procs. stdout and stderr are drained by a thread of the object into bounded
// buffers; they are logs, never parsed. The deadline (ProcessSpec::timeout, or the movable
// ProcessSpec::deadline) and a stop token kill the whole process group.
//
// Every child is forked by one long-lived thread of the process: a death signal tied to the
// forking thread (PR_SET_PDEATHSIG, bubblewrap's --die-with-parent) must not fire when the thread
// that asked for the child ends while the child is still in use.
//
// Thread-safety: the methods may be called from any thread; one caller at a time talks to a child.
#ifndef KFORGE_CORE_CHILD_PROCESS_H_
#define KFORGE_CORE_CHILD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "kforge/core/error.h"
#include "kforge/core/subprocess.h"

namespace kforge {

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts `spec` (with `stop`: cancellation kills the group). Errors only for failures to start
  // (pipes, fork, exec: "cannot start 'x': No such file or directory").
  static Result<std::unique_ptr<ChildProcess>> Start(const ProcessSpec& spec,
                                                     std::stop_token stop = {});
  // Kills the process group if it still runs and reaps the child.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  pid_t pgid() const { return pid_; }  // the child leads its own group
  // A pidfd of the child (readable once it has exited), for poll() beside other descriptors.
  int pidfd() const { return pidfd_; }

  // Sends `sig` to the child's whole process group; false when none of it is left.
  bool SignalGroup(int sig);

  // True until the child has exited (reaped by the drain thread).
  bool running() const;

  // Waits until the child has exited or `deadline` passed: its result, or nullopt while it runs.
  std::optional<ProcessResult> WaitUntil(Clock::time_point deadline);

  // Kills the whole process group now and waits: the result says timed_out when `timed_out` (the
  // caller's deadline), failed otherwise (killed by SIGKILL).
  ProcessResult Kill(bool timed_out = false);

  // What the child wrote so far (bounded), for a failure's diagnostics while it runs.
  std::string StderrSoFar() const;

 private:
  struct State;
  ChildProcess(pid_t pid, int pidfd, std::shared_ptr<State> state);

  pid_t pid_;
  int pidfd_;
  std::shared_ptr<State> state_;
};

}  // namespace kforge

#endif  // KFORGE_CORE_CHILD_PROCESS_H_
