// The freeze (runner/HARNESS.md, "Freeze"): every process of a child stopped at once, so that
// the parent can copy what it judges out of shared memory while nothing of the child runs, and
// nothing the child does after its reply changes what is judged.
//
// Methods, strongest first (Create picks the first that works here):
// - cgroup-v1: a fresh cgroup of the v1 freezer hierarchy (/sys/fs/cgroup/freezer). The child
//   joins it before exec (ProcessSpec::cgroup_procs), so every process it ever starts is born in
//   it and cannot leave (the cgroup's files belong to KForge's user); freezing stops all of them.
// - cgroup-v2: the same with a cgroup2 hierarchy's cgroup.freeze.
// - signals: SIGSTOP to the child and every descendant found under it in /proc, repeated until
//   the set is stable and every thread is stopped; SIGCONT to thaw. A process that leaves the
//   tree (an orphan re-parented outside it) escapes this method: the bubblewrap sandbox's pid
//   namespace keeps orphans inside the tree, and the native harness forbids fork (docs/trust.md).
//
// KFORGE_FREEZE=cgroup-v1|cgroup-v2|signals forces a method (tests, debugging).
//
// Thread-safety: one owner.
#ifndef KFORGE_EVAL_FREEZER_H_
#define KFORGE_EVAL_FREEZER_H_

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "kforge/core/error.h"

namespace kforge {

enum class FreezeMethod { kCgroupV1, kCgroupV2, kSignals };
std::string_view FreezeMethodName(FreezeMethod method);
Result<FreezeMethod> ParseFreezeMethod(std::string_view name);

class Freezer {
 public:
  using Clock = std::chrono::steady_clock;

  // The strongest method available here, or `method` (an error if it does not work here).
  static Result<std::unique_ptr<Freezer>> Create(std::optional<FreezeMethod> method = {});
  // Thaws, kills whatever is left in a cgroup, removes the cgroup.
  virtual ~Freezer() = default;

  virtual FreezeMethod method() const = 0;
  // cgroup methods: the cgroup.procs file the child must join before exec; empty for signals.
  virtual std::filesystem::path procs_file() const = 0;
  // The child at the root of the tree (the signals method finds the tree from it).
  virtual void Attach(pid_t root) = 0;
  // Returns once every process of the child is stopped (an error at `deadline`, still frozen as
  // far as it got: call Thaw).
  virtual Status Freeze(Clock::time_point deadline) = 0;
  virtual Status Thaw() = 0;
  // SIGKILL to every process of the child, also those that left its process group (thawed
  // first: a frozen process cannot die). Call while the root still runs (the signal method finds
  // the tree from it).
  virtual void KillAll() = 0;
  // How many processes the last Freeze stopped (diagnostics and tests).
  virtual int frozen_processes() const = 0;
};

}  // namespace kforge

#endif  // KFORGE_EVAL_FREEZER_H_
