// The task a `kforge run` names: SUITE.toml#ID (a task of a suite, with its overrides) or any
// form LoadTask() reads (PROBLEM.py, DATASET.jsonl#N, kernelbench:levelL#N).
#ifndef KFORGE_APP_TASK_SPEC_H_
#define KFORGE_APP_TASK_SPEC_H_

#include <string>

#include "kforge/core/error.h"
#include "kforge/task/task.h"

namespace kforge::app {

// Errors name the spec and, for a suite, its tasks.
Result<Task> LoadTaskSpec(const std::string& spec);

// `spec` with its file made absolute (the #ID or #N kept), so that a resume from elsewhere finds
// it; a spec that names no existing file is returned unchanged.
std::string AbsoluteTaskSpec(const std::string& spec);

}  // namespace kforge::app

#endif  // KFORGE_APP_TASK_SPEC_H_
