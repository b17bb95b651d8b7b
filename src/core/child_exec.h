// The forked child's side of starting a process (RunProcess, ChildProcess): descriptors put in
// place, process group, death signal, cgroup, limits, user, working folder, exec. Internal to
// src/core.
#ifndef KFORGE_SRC_CORE_CHILD_EXEC_H_
#define KFORGE_SRC_CORE_CHILD_EXEC_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kforge/core/error.h"

#include "kforge/core/subprocess.h"

namespace kforge {

struct Pipe {
  int read = -1;
  int write = -1;
};

// A pipe whose ends are close-on-exec.
Result<Pipe> MakePipe();

// Closes `fd` if open and sets it to -1.
void CloseFd(int& fd);

// Descriptors of the parent that the child puts in place. -1: /dev/null (stdin) or nothing.
struct ChildDescriptors {
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // Placed at 3, 4, ... in order. Empty: fd 3 is /dev/null (so that nothing mistakes a later
  // file for the result pipe).
  std::vector<int> from_fd3;
  int exec_error_fd = -1;  // close-on-exec; the child writes errno here if the exec fails
};

// Everything ExecChild reads, prepared before fork (nothing is allocated after it).
struct PreparedExec {
  std::vector<char*> argv;
  std::vector<char*> envp;
};
PreparedExec PrepareExec(const ProcessSpec& spec);

// Runs in the forked child: only async-signal-safe calls until exec. Never returns.
[[noreturn]] void ExecChild(const ProcessSpec& spec, const PreparedExec& exec,
                            const ChildDescriptors& fds);

// Watches a child's FolderQuota from its wait loop. Poll walks the folder when a walk is due
// (every 100 ms or so; less often when a walk is slow: at most a tenth of the time walking) and
// returns what ProcessResult::limit_exceeded says once a limit is passed, "" otherwise (and
// always "" without a quota).
class FolderQuotaWatch {
 public:
  FolderQuotaWatch(std::shared_ptr<FolderQuota> quota, std::chrono::steady_clock::time_point now)
      : quota_(std::move(quota)), next_(now) {}
  std::string Poll(std::chrono::steady_clock::time_point now);

 private:
  std::shared_ptr<FolderQuota> quota_;
  std::chrono::steady_clock::time_point next_;
};

// SIGKILL to a process group, repeated while members remain (a fork bomb adds members between
// two kills).
void KillGroup(pid_t pgid);

}  // namespace kforge

#endif  // KFORGE_SRC_CORE_CHILD_EXEC_H_
