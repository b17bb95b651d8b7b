#include "findings.h"

#include <fmt/format.h>

#include <algorithm>

#include "rule_catalogue.h"

namespace kforge::guardrails {

void Findings::Add(std::string_view rule, GuardrailSeverity severity, int line, std::string found,
                   std::string detail) {
  if (!seen_.insert({std::string(rule), line}).second) return;
  if (++per_rule_[std::string(rule)] > kMaxPerRule) return;
  GuardrailFinding f;
  f.rule = std::string(rule);
  f.severity = severity;
  f.line = line;
  f.message = fmt::format("`{}` {}{}", found, detail.empty() ? "" : detail + " ", RuleText(rule));
  f.found = std::move(found);
  findings_.push_back(std::move(f));
}

GuardrailReport Findings::Report() {
  std::stable_sort(findings_.begin(), findings_.end(),
                   [](const auto& a, const auto& b) { return a.line < b.line; });
  return GuardrailReport{std::move(findings_)};
}

}  // namespace kforge::guardrails
