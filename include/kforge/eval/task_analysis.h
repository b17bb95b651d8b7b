// Facts about a task that the static guardrails need (GuardrailOptions): the sizes a general
// kernel must not hard-code, and whether the task itself computes in fp16/bf16. Read from the
// task's Python source with the guardrails' lexer, so comments and strings never count.
//
// Thread-safety: pure functions.
#ifndef KFORGE_EVAL_TASK_ANALYSIS_H_
#define KFORGE_EVAL_TASK_ANALYSIS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "kforge/task/task.h"

namespace kforge {

// The integer module-level globals of the task source (`batch_size = 16`), with the task's
// overrides applied: the sizes a general kernel must not hard-code. Only values >= 8 are kept
// (smaller ones collide with loop bounds and ranks everywhere).
std::vector<std::int64_t> TaskDimensions(const Task& task);

// Whether the task source computes in fp16 or bf16 (mentions torch.float16, torch.half,
// torch.bfloat16, .half() or .bfloat16() outside comments and strings).
bool TaskUsesLowPrecision(std::string_view task_source);

}  // namespace kforge

#endif  // KFORGE_EVAL_TASK_ANALYSIS_H_
