// The check of tasks before any candidate is asked for: each task loaded and its reference run
// once (the runner's `task_check` phase, one process for all of them). A task that cannot run —
// a syntax error, a forward that raises, inputs whose shapes the model rejects, an output that
// is not a tensor — is the user's mistake, to be fixed in the task, never a model's to guess at:
// `kforge run` and `kforge bench` stop before the first prompt with one line per broken task.
//
// Thread-safety: calls may run concurrently; each owns its scratch folder.
#ifndef KFORGE_EVAL_TASK_CHECK_H_
#define KFORGE_EVAL_TASK_CHECK_H_

#include <optional>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/eval/evaluator.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge {

// Why one task cannot run.
struct TaskProblem {
  std::string task_name;
  std::string origin;       // Task::origin: its file, or DATASET.jsonl#N
  std::optional<int> line;  // 1-based line of the task's source, when a frame lies in it
  std::string stage;        // "loading the task", "constructing Model", "get_inputs()", "forward"
  std::string function;     // the task's function at that line, when known
  std::string error;        // the exception's type and message, one line

  // One line: "task.py:6: NameError: name 'y' is not defined (in forward)"; a dataset entry
  // says "level1.jsonl#19, line 6 of its code: ...".
  std::string Describe() const;
};

// Runs every task of `tasks` once on `backend`'s device, sandboxed like the reference phase
// (memory limit `options.memory_limit_bytes` on CPU targets, `options.reference_timeout` for the
// whole check). Returns the problems, in the order of `tasks` (empty: every task ran). Errors are
// KForge's own (no runner, a result that does not parse, a timeout), never a task's.
Result<std::vector<TaskProblem>> CheckTasks(const std::vector<Task>& tasks,
                                            const Backend& backend, const EvalOptions& options);

// CheckTasks as a Status: kInvalidArgument whose message is one line per broken task (each
// ending "fix the task; no model was asked"), or Ok.
Status CheckTasksRun(const std::vector<Task>& tasks, const Backend& backend,
                     const EvalOptions& options);

}  // namespace kforge

#endif  // KFORGE_EVAL_TASK_CHECK_H_
