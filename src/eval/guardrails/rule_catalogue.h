// The catalogue of static guardrail rules: each rule's stable id (stored in verdicts, never
// renamed) and the text the model reads: why the rule exists and what to do instead.
// Internal to src/eval. Thread-safety: pure functions.
#ifndef KFORGE_SRC_EVAL_GUARDRAILS_RULE_CATALOGUE_H_
#define KFORGE_SRC_EVAL_GUARDRAILS_RULE_CATALOGUE_H_

#include <string_view>

namespace kforge::guardrails {

// Why `rule` exists and what to do instead; a finding's message starts with what was found and
// ends with this text. Empty for an id the catalogue does not hold.
std::string_view RuleText(std::string_view rule);

}  // namespace kforge::guardrails

#endif  // KFORGE_SRC_EVAL_GUARDRAILS_RULE_CATALOGUE_H_
