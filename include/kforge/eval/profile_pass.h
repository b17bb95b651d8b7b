// The profile pass: one candidate (or the task's reference Model) run under a profiler in a
// separate, untimed pass — a reference phase for the inputs, then a fresh (not warm) runner in the
// runner's `profile` phase (runner/PROTOCOL.md), optionally wrapped by a profiler's command line
// (Nsight Compute, Nsight Systems). Correctness is not judged here: `kforge eval` does that.
//
// Thread-safety: each call owns its work folder; calls may run concurrently.
#ifndef KFORGE_EVAL_PROFILE_PASS_H_
#define KFORGE_EVAL_PROFILE_PASS_H_

#include <chrono>
#include <filesystem>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/eval/compile_service.h"
#include "kforge/eval/evaluator.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge {

struct ProfilePassRequest {
  std::string runner_tool = "torch";  // the runner's profile tool: torch, opencl, external
  int calls = 3;                      // profiled calls after one warm-up call
  // The command line put before the runner's (e.g. {"/usr/local/cuda/bin/ncu", ...}), given the
  // folder the profiled process may write to; empty: no wrapper.
  std::function<std::vector<std::string>(const std::filesystem::path& out)> wrapper;
  // The profiler's process runs as KForge's user, not the unprivileged one: GPU performance
  // counters are usually restricted to administrators (NVreg_RestrictProfilingToAdminUsers).
  bool keep_privileges = false;
  bool reference = false;                     // profile the task's reference Model
  std::chrono::seconds timeout{600};          // the profiled runner, wall clock
  std::filesystem::path output_dir;           // where the files the pass wrote are copied
};

struct ProfilePassResult {
  std::string status;       // the runner's status ("ok", "runtime_error", ...) or how it died
  std::string diagnostics;  // the runner's diagnostics, or the compiler's
  std::string log;          // the profiled process's stderr tail (the wrapper's messages)
  std::vector<std::filesystem::path> files;  // copied into output_dir
  bool ok() const { return status == "ok"; }
};

// Errors: KForge's own failures (no runner, a folder that cannot be written, a reference that
// fails: the task's fault). A candidate that fails to compile or run is a result, not an error.
Result<ProfilePassResult> RunProfilePass(CompileService& compiler, const EvalOptions& options,
                                         const Task& task, const Backend& backend,
                                         const std::filesystem::path& candidate,
                                         const ProfilePassRequest& request,
                                         std::stop_token stop = {});

}  // namespace kforge

#endif  // KFORGE_EVAL_PROFILE_PASS_H_
