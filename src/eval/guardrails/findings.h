// The findings of one guardrail check, collected while the rules read a candidate's tokens.
// A finding's message is the code that was found, an optional detail and the rule's catalogue
// text (rule_catalogue.h). One finding per rule and line; at most kMaxPerRule per rule, so a
// pattern repeated all over a file does not drown the others.
// Internal to src/eval. Thread-safety: one Findings per check, used by one thread.
#ifndef KFORGE_SRC_EVAL_GUARDRAILS_FINDINGS_H_
#define KFORGE_SRC_EVAL_GUARDRAILS_FINDINGS_H_

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kforge/eval/guardrails.h"

namespace kforge::guardrails {

class Findings {
 public:
  // `options` must outlive this object.
  explicit Findings(const GuardrailOptions& options) : options_(options) {}

  // The options of the check (policy, allowed reference ops, the task's sizes).
  const GuardrailOptions& options() const { return options_; }

  void Add(std::string_view rule, GuardrailSeverity severity, int line, std::string found,
           std::string detail = {});
  void Reject(std::string_view rule, int line, std::string found, std::string detail = {}) {
    Add(rule, GuardrailSeverity::kReject, line, std::move(found), std::move(detail));
  }
  void Flag(std::string_view rule, int line, std::string found, std::string detail = {}) {
    Add(rule, GuardrailSeverity::kFlag, line, std::move(found), std::move(detail));
  }

  // The findings in source order (stable for findings on one line); leaves this object empty.
  GuardrailReport Report();

 private:
  static constexpr int kMaxPerRule = 5;
  const GuardrailOptions& options_;
  std::vector<GuardrailFinding> findings_;
  std::set<std::pair<std::string, int>> seen_;
  std::map<std::string, int> per_rule_;
};

}  // namespace kforge::guardrails

#endif  // KFORGE_SRC_EVAL_GUARDRAILS_FINDINGS_H_
