#include "kforge/eval/task_analysis.h"

#include <cstddef>
#include <map>
#include <set>
#include <string>

#include "guardrails/lexer.h"
#include "guardrails/python_scopes.h"
#include "guardrails/token_queries.h"

namespace kforge {

using guardrails::Canonical;
using guardrails::IntValue;
using guardrails::IsCall;
using guardrails::LastPart;
using guardrails::LexPython;
using guardrails::MergeNames;
using guardrails::NextIs;
using guardrails::PythonAliases;
using guardrails::TokKind;

std::vector<std::int64_t> TaskDimensions(const Task& task) {
  const auto tokens = MergeNames(LexPython(task.source), false);
  std::map<std::string, std::vector<std::int64_t>> globals;
  for (std::size_t i = 0; i + 2 < tokens.size(); ++i) {
    if (!tokens[i].line_start || tokens[i].indent != 0 || tokens[i].kind != TokKind::kName ||
        !NextIs(tokens, i, "=")) {
      continue;
    }
    std::vector<std::int64_t> values;
    for (std::size_t k = i + 2; k < tokens.size() && !tokens[k].line_start; ++k) {
      if (auto v = IntValue(tokens[k])) values.push_back(*v);
    }
    globals[tokens[i].text] = std::move(values);
  }
  for (const auto& o : task.overrides) {
    std::vector<std::int64_t> values;
    const auto json = MergeNames(LexPython(o.value_json), false);
    for (const auto& tok : json) {
      if (auto v = IntValue(tok)) values.push_back(*v);
    }
    globals[o.name] = std::move(values);
  }
  std::set<std::int64_t> dims;
  for (const auto& [name, values] : globals) {
    for (auto v : values) {
      if (v >= 8) dims.insert(v);
    }
  }
  return {dims.begin(), dims.end()};
}

bool TaskUsesLowPrecision(std::string_view task_source) {
  const auto tokens = MergeNames(LexPython(task_source), false);
  const auto aliases = PythonAliases(tokens);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind != TokKind::kName) continue;
    const std::string c = Canonical(tokens[i].text, aliases);
    if (c == "torch.float16" || c == "torch.half" || c == "torch.bfloat16") return true;
    const std::string_view leaf = LastPart(c);
    if ((leaf == "half" || leaf == "bfloat16") && IsCall(tokens, i) &&
        c.find('.') != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace kforge
