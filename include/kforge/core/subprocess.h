// Child processes with a state machine, bounded output capture, resource limits, an optional
// result pipe, and a wall-clock timeout that kills the whole process group.
//
// Thread-safety: RunProcess may be called from many threads at once; each call owns its child.
#ifndef KFORGE_CORE_SUBPROCESS_H_
#define KFORGE_CORE_SUBPROCESS_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.h"

namespace kforge {

// Lifecycle of one child: pending -> running -> done | failed | timed_out.
// done: exited with status 0; failed: non-zero exit or killed by a signal; timed_out: killed by us
// at the deadline (or on cancellation).
enum class ProcessState { kPending, kRunning, kDone, kFailed, kTimedOut };
std::string_view ProcessStateName(ProcessState state);

// setrlimit values applied in the child before exec; unset means inherited.
struct ResourceLimits {
  std::optional<std::uint64_t> address_space_bytes;  // RLIMIT_AS (breaks CUDA: leave unset there)
  std::optional<std::uint64_t> cpu_seconds;          // RLIMIT_CPU
  std::optional<std::uint64_t> processes;  // RLIMIT_NPROC, per user: effective for non-root uids
  std::optional<std::uint64_t> file_size_bytes;      // RLIMIT_FSIZE
  std::optional<std::uint64_t> open_files;           // RLIMIT_NOFILE
};

// A folder whose contents count against the child (its scratch folder): RunProcess adds up the
// blocks its files hold and counts its entries while the child runs, and kills the child's
// process group once either passes its limit (ProcessResult::limit_exceeded says which). The
// check is a walk every 100 ms or so (less often when a walk is slow), so a fast writer can pass
// the limit by what it writes in that time before it is stopped.
struct FolderQuota {
  std::filesystem::path folder;
  // May be raised while the child runs (a warm runner learns its outputs' size with its job).
  std::atomic<std::uint64_t> max_bytes{0};
  std::uint64_t max_entries = 100000;
};

// File descriptor number at which the child finds the write end of the result pipe.
inline constexpr int kResultFd = 3;

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  // Complete environment of the child as NAME=VALUE; empty means inherit ours.
  std::vector<std::string> env;
  std::filesystem::path cwd;                  // empty: inherit
  std::chrono::milliseconds timeout{0};       // 0: no deadline
  // A deadline the caller may move while the child runs (steady_clock nanoseconds since its
  // epoch; 0: none). When set, it replaces `timeout`: a warm-started runner gets its real limit
  // only once its job exists.
  std::shared_ptr<std::atomic<std::int64_t>> deadline;
  ResourceLimits limits;
  std::optional<uid_t> uid;                   // switch to this user (needs root)
  std::optional<gid_t> gid;
  bool result_pipe = false;                   // open a pipe whose write end is kResultFd
  // The child's stdin: these bytes through a pipe (then end of file); empty: /dev/null. At most
  // PIPE_BUF bytes (written before the child runs, so the write never blocks).
  std::string stdin_data;
  std::size_t max_output_bytes = 256 * 1024;  // per stream; the head and the tail are kept
  // ChildProcess only: descriptors of the caller placed at 3, 4, ... in the child, in order (at
  // most 16; not with result_pipe). They survive a sandbox wrapper such as bubblewrap.
  std::vector<int> inherit_fds;
  // A cgroup's `cgroup.procs` file the child joins before anything else (empty: none), so that
  // every process it starts is born inside that cgroup.
  std::filesystem::path cgroup_procs;
  std::shared_ptr<FolderQuota> folder_quota;   // null: none
  // Set to the child's pid while it runs and to 0 once it has been reaped (for a caller that
  // watches the child, e.g. the load monitor); null: not reported.
  std::shared_ptr<std::atomic<pid_t>> running_pid;
};

struct ProcessResult {
  ProcessState state = ProcessState::kPending;
  int exit_code = -1;        // when the child exited
  int term_signal = 0;       // when a signal ended it (SIGKILL after a timeout included)
  bool cancelled = false;    // killed because the stop token fired
  std::string stdout_text;   // bounded: head + "[... N bytes cut ...]" + tail
  std::string stderr_text;
  std::string result_text;   // everything written to the result pipe (unbounded up to 64 MiB)
  double wall_seconds = 0;
  double cpu_seconds = 0;    // user + system of the child and its waited-for descendants
  long max_rss_kib = 0;
  // Set when RunProcess killed the child for passing a limit it watches (ProcessSpec::
  // folder_quota): one line naming the limit, e.g. "the scratch folder ... held 1.20 GiB, more
  // than its quota of 1.06 GiB". The state is then kFailed with term_signal SIGKILL.
  std::string limit_exceeded;
};

// Starts the child, waits for it (or the deadline / stop request), kills its process group, and
// returns what happened. Errors are only for failures to start (fork/pipe/exec problems); a child
// that crashes or times out is a successful call with that state.
Result<ProcessResult> RunProcess(const ProcessSpec& spec, std::stop_token stop = {});

// Searches PATH for `name`; empty if absent.
std::string FindProgram(std::string_view name);

}  // namespace kforge

#endif  // KFORGE_CORE_SUBPROCESS_H_
