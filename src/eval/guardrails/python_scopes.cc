#include "python_scopes.h"

#include <fmt/format.h>

#include "token_queries.h"

namespace kforge::guardrails {

std::map<std::string, std::string> PythonAliases(const std::vector<Token>& t) {
  std::map<std::string, std::string> aliases;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (!t[i].line_start || t[i].kind != TokKind::kName) continue;
    std::size_t end = i + 1;
    while (end < t.size() && !t[end].line_start) ++end;
    if (t[i].text == "import") {
      for (std::size_t k = i + 1; k < end; ++k) {
        if (t[k].kind != TokKind::kName || t[k].text == "as") continue;
        if (k + 2 < end && t[k + 1].text == "as") {
          aliases[t[k + 2].text] = t[k].text;
          k += 2;
        } else {
          const std::string first(FirstPart(t[k].text));
          aliases[first] = first;
        }
      }
    } else if (t[i].text == "from" && i + 2 < end && t[i + 2].text == "import") {
      const std::string module = t[i + 1].text;
      for (std::size_t k = i + 3; k < end; ++k) {
        if (t[k].kind != TokKind::kName || t[k].text == "as") continue;
        std::string bound = t[k].text;
        if (k + 2 < end && t[k + 1].text == "as") {
          bound = t[k + 2].text;
          aliases[bound] = fmt::format("{}.{}", module, t[k].text);
          k += 2;
        } else {
          aliases[bound] = fmt::format("{}.{}", module, t[k].text);
        }
      }
    }
  }
  return aliases;
}

std::string Canonical(const std::string& name, const std::map<std::string, std::string>& aliases) {
  if (name.empty() || name[0] == '.') return name;
  const std::string first(FirstPart(name));
  auto it = aliases.find(first);
  if (it == aliases.end()) return name;
  return it->second + name.substr(first.size());
}

std::vector<PyScope> PythonScopes(const std::vector<Token>& t,
                                  const std::map<std::string, std::string>& aliases) {
  struct Open {
    int indent;
    bool is_def;
    bool is_init;
    bool is_kernel;
  };
  std::vector<Open> stack;
  std::vector<PyScope> scopes(t.size());
  bool kernel_decorator = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].line_start) {
      while (!stack.empty() && t[i].indent <= stack.back().indent) stack.pop_back();
      if (t[i].text == "@" && i + 1 < t.size()) {
        const std::string d = Canonical(t[i + 1].text, aliases);
        kernel_decorator |= InModule(FirstPart(d), "triton") || InModule(FirstPart(d), "cutlass") ||
                            InModule(FirstPart(d), "cute");
      }
    }
    if (t[i].kind == TokKind::kName && (t[i].text == "def" || t[i].text == "class") &&
        (t[i].line_start || (i > 0 && t[i - 1].text == "async"))) {
      const bool is_def = t[i].text == "def";
      const bool is_init = is_def && i + 1 < t.size() && t[i + 1].text == "__init__";
      stack.push_back({t[i].indent, is_def, is_init, is_def && kernel_decorator});
      kernel_decorator = false;
    }
    for (const auto& o : stack) {
      scopes[i].in_function |= o.is_def;
      scopes[i].in_init |= o.is_init;
      scopes[i].in_kernel |= o.is_kernel;
    }
  }
  return scopes;
}

}  // namespace kforge::guardrails
