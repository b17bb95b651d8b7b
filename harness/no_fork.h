// The harness forbids new processes before candidate code loads: a seccomp filter (which no
// code in the process can remove afterwards) refuses fork, vfork, clone without CLONE_THREAD,
// execve and execveat with EPERM, and clone3 with ENOSYS (so that thread creation falls back to
// clone, where CLONE_THREAD is visible); ptrace and cross-process memory access are refused too.
// Threads stay allowed (OpenMP, driver threads). docs/trust.md says which attacks this closes.
#ifndef KFORGE_HARNESS_NO_FORK_H_
#define KFORGE_HARNESS_NO_FORK_H_

#include <string>

namespace kforge_harness {

// Installs the filter for this process and all its threads; false with `error` set when the
// kernel refuses it.
bool ForbidNewProcesses(std::string* error);

}  // namespace kforge_harness

#endif  // KFORGE_HARNESS_NO_FORK_H_
