// Evaluator: compile -> reference -> candidate -> compare, for one candidate of one task on one
// target, following EVAL-PROTOCOL's correctness rules (runner/PROTOCOL.md for the processes).
//
// Each evaluation gets a private work folder: the task source, a copy of the candidate (and its
// shared object), the reference's inputs (readable by the candidate phase) and outputs (hidden
// from it: another user's 0700 folder, and an empty folder inside the sandbox), and the
// candidate's scratch folder. The reference phase and the compile run at the same time. Seeds are
// drawn fresh from std::random_device for every evaluation unless EvalOptions::seed pins them.
//
// Thread-safety: Evaluate() may be called from several threads; each call owns its work folder.
#ifndef KFORGE_EVAL_EVALUATOR_H_
#define KFORGE_EVAL_EVALUATOR_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stop_token>

#include "kforge/eval/compile_service.h"
#include "kforge/eval/verdict.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge {

struct EvalOptions {
  int trials = 5;                                      // at least 2: one uses a second distribution
  std::chrono::seconds reference_timeout{600};         // the reference phase, wall clock
  std::chrono::seconds candidate_timeout{120};         // the candidate phase of native/OpenCL
  std::chrono::seconds module_timeout{600};            // Python modules (load_inline compiles)
  std::uint64_t memory_limit_bytes = 8ull << 30;       // address space of CPU-target runners
  std::uint64_t process_limit = 1024;                  // processes + threads of the runner's user
  std::optional<PrecisionPolicy> policy;               // overrides the task's policy
  std::optional<std::uint64_t> seed;                   // reproduce a run; default: fresh, secret
  std::filesystem::path work_root;                     // default: $TMPDIR/kforge-<uid>
  bool keep_work_dir = false;                          // keep the folder for debugging
};

class Evaluator {
 public:
  Evaluator(CompileService& compiler, EvalOptions options);

  // Always returns a verdict; failures of the candidate, the task or KForge itself are statuses.
  Verdict Evaluate(const Task& task, const Backend& backend,
                   const std::filesystem::path& candidate, std::stop_token stop = {});

 private:
  CompileService& compiler_;
  EvalOptions options_;
};

}  // namespace kforge

#endif  // KFORGE_EVAL_EVALUATOR_H_
