// The guardrail rules over Python source: a module candidate (Triton, CuTe DSL, Metal,
// KernelBench-style load_inline submissions) or an OpenCL candidate's host file. Each rule of
// the catalogue that applies to Python is checked here; code inside strings is for CheckCRules.
// Internal to src/eval. Thread-safety: as the Findings it writes to.
#ifndef KFORGE_SRC_EVAL_GUARDRAILS_PYTHON_RULES_H_
#define KFORGE_SRC_EVAL_GUARDRAILS_PYTHON_RULES_H_

#include <vector>

#include "findings.h"
#include "kforge/target/backend.h"
#include "lexer.h"

namespace kforge::guardrails {

// `t`: the file's merged Python tokens. `rules`: the dialect facts of the target's backend
// (kernel decorators, device loops, calls that default to TF32); `kind` how the runner loads the
// file (module rules apply to kModule only).
void CheckPythonRules(const std::vector<Token>& t, const StaticRuleSet& rules, CandidateKind kind,
                      Findings& findings);

}  // namespace kforge::guardrails

#endif  // KFORGE_SRC_EVAL_GUARDRAILS_PYTHON_RULES_H_
