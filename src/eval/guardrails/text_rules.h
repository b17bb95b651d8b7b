// Guardrail rules that read both languages alike: string contents (paths into /proc and inherited
// descriptors, package installs, inline PTX with low-precision types) and numeric literals equal
// to one of the task's sizes (hardcoded-shape). Internal to src/eval.
// Thread-safety: as the Findings they write to.
#ifndef KFORGE_SRC_EVAL_GUARDRAILS_TEXT_RULES_H_
#define KFORGE_SRC_EVAL_GUARDRAILS_TEXT_RULES_H_

#include <vector>

#include "findings.h"
#include "lexer.h"

namespace kforge::guardrails {

// Rules on string contents; inline PTX is read only when `lang` is C.
void CheckStringRules(const std::vector<Token>& t, Lang lang, Findings& findings);

// Numeric literals equal to one of the task's sizes used as a size; off when the options name no
// task dimensions.
void CheckHardcodedShapes(const std::vector<Token>& t, Findings& findings);

}  // namespace kforge::guardrails

#endif  // KFORGE_SRC_EVAL_GUARDRAILS_TEXT_RULES_H_
