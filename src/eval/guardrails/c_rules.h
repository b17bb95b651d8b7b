// The guardrail rules over C-like source: native candidates (CUDA, HIP, C++, SYCL), OpenCL C,
// and C++/CUDA embedded in a module candidate (load_inline sources).
// Internal to src/eval. Thread-safety: as the Findings it writes to.
#ifndef KFORGE_SRC_EVAL_GUARDRAILS_C_RULES_H_
#define KFORGE_SRC_EVAL_GUARDRAILS_C_RULES_H_

#include <vector>

#include "findings.h"
#include "lexer.h"

namespace kforge::guardrails {

// `t`: merged C tokens. `embedded_in_module`: the code sits in a string of a module candidate,
// where tensor methods are the reference framework's.
void CheckCRules(const std::vector<Token>& t, bool embedded_in_module, Findings& findings);

}  // namespace kforge::guardrails

#endif  // KFORGE_SRC_EVAL_GUARDRAILS_C_RULES_H_
