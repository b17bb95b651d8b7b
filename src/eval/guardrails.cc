#include "kforge/eval/guardrails.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <set>

#include "guardrails/c_rules.h"
#include "guardrails/findings.h"
#include "guardrails/lexer.h"
#include "guardrails/python_rules.h"
#include "guardrails/text_rules.h"
#include "guardrails/token_queries.h"

namespace kforge {
namespace {

using guardrails::CheckCRules;
using guardrails::CheckHardcodedShapes;
using guardrails::CheckPythonRules;
using guardrails::CheckStringRules;
using guardrails::Findings;
using guardrails::Lang;
using guardrails::LexC;
using guardrails::LexPython;
using guardrails::MergeNames;
using guardrails::NextIs;
using guardrails::TokKind;

// Code embedded in a Python string: an OpenCL candidate's SOURCE, load_inline sources.
bool LooksLikeCCode(std::string_view s) {
  for (std::string_view marker : {"#include", "__global__", "__kernel", "__device__",
                                  "torch::", "extern \"C\"", "kforge_forward", "at::"}) {
    if (s.find(marker) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

std::string_view GuardrailSeverityName(GuardrailSeverity severity) {
  return severity == GuardrailSeverity::kReject ? "reject" : "flag";
}

std::string GuardrailFinding::Format() const {
  return fmt::format("line {}: [{}] {}", line, rule, message);
}

bool GuardrailReport::rejected() const {
  return std::any_of(findings.begin(), findings.end(), [](const auto& f) {
    return f.severity == GuardrailSeverity::kReject;
  });
}

std::string GuardrailReport::FormatRejects() const {
  std::string out;
  for (const auto& f : findings) {
    if (f.severity != GuardrailSeverity::kReject) continue;
    out += f.Format();
    out += '\n';
  }
  return out;
}

std::vector<std::string> GuardrailReport::FlagLines() const {
  std::vector<std::string> out;
  for (const auto& f : findings) {
    if (f.severity == GuardrailSeverity::kFlag) out.push_back(f.Format());
  }
  return out;
}

GuardrailReport CheckCandidate(std::string_view source, ProgrammingModel model, CandidateKind kind,
                               const GuardrailOptions& options) {
  return CheckCandidate(source, TraitsOf(model).static_rules, kind, options);
}

GuardrailReport CheckCandidate(std::string_view source, const StaticRuleSet& rules,
                               CandidateKind kind, const GuardrailOptions& options) {
  Findings findings(options);
  if (kind == CandidateKind::kNative) {
    const auto tokens = MergeNames(LexC(source, 1), true);
    CheckCRules(tokens, false, findings);
    CheckStringRules(tokens, Lang::kC, findings);
    CheckHardcodedShapes(tokens, findings);
    return findings.Report();
  }
  const auto tokens = MergeNames(LexPython(source), false);
  CheckPythonRules(tokens, rules, kind, findings);
  CheckStringRules(tokens, Lang::kPython, findings);
  CheckHardcodedShapes(tokens, findings);
  // Strings holding C code are scanned as C, at their own line numbers: the OpenCL SOURCE (every
  // string of the `SOURCE = ...` statement) and load_inline sources.
  std::set<std::size_t> source_strings;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].text != "SOURCE" || !tokens[i].line_start || !NextIs(tokens, i, "=")) continue;
    for (std::size_t k = i + 2; k < tokens.size() && !tokens[k].line_start; ++k) {
      if (tokens[k].kind == TokKind::kString) source_strings.insert(k);
    }
  }
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind != TokKind::kString) continue;
    if (source_strings.count(i) == 0 && !LooksLikeCCode(tokens[i].text)) continue;
    const auto code = MergeNames(LexC(tokens[i].text, tokens[i].line), true);
    CheckCRules(code, kind == CandidateKind::kModule, findings);
    CheckStringRules(code, Lang::kC, findings);
    CheckHardcodedShapes(code, findings);
  }
  return findings.Report();
}

}  // namespace kforge
