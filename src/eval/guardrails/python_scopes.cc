#include "python_scopes.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

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
                                  const std::map<std::string, std::string>& aliases,
                                  const StaticRuleSet& rules) {
  struct Open {
    int indent;
    bool is_def;
    bool is_init;
    bool is_kernel;
    bool kernel_has_host_code;  // a kernel whose device code is its device loops only
    bool is_device_loop;
  };
  // The decorator module of a kernel whose device code is only its device loops ("helion" for
  // "helion.language.tile").
  auto has_device_loops = [&](std::string_view module) {
    return std::any_of(rules.device_loop_iterables.begin(), rules.device_loop_iterables.end(),
                       [&](const std::string& it) { return InModule(it, module) && it != module; });
  };
  std::vector<Open> stack;
  std::vector<PyScope> scopes(t.size());
  bool kernel_decorator = false;
  bool decorator_has_host_code = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].line_start) {
      while (!stack.empty() && t[i].indent <= stack.back().indent) stack.pop_back();
      if (t[i].text == "@" && i + 1 < t.size()) {
        const std::string d = Canonical(t[i + 1].text, aliases);
        for (const std::string& module : rules.kernel_decorator_modules) {
          if (InModule(FirstPart(d), module)) {
            kernel_decorator = true;
            decorator_has_host_code |= has_device_loops(module);
          }
        }
      }
    }
    if (t[i].kind == TokKind::kName && (t[i].text == "def" || t[i].text == "class") &&
        (t[i].line_start || (i > 0 && t[i - 1].text == "async"))) {
      const bool is_def = t[i].text == "def";
      const bool is_init = is_def && i + 1 < t.size() && t[i + 1].text == "__init__";
      const bool is_kernel = is_def && kernel_decorator;
      stack.push_back(
          {t[i].indent, is_def, is_init, is_kernel, is_kernel && decorator_has_host_code, false});
      kernel_decorator = false;
      decorator_has_host_code = false;
    }
    // `for TARGETS in ITERABLE(...):` over a device-loop iterable opens device code.
    if (t[i].kind == TokKind::kName && t[i].text == "for" && t[i].line_start &&
        !rules.device_loop_iterables.empty()) {
      bool device_loop = false;
      for (std::size_t k = i + 1; k + 1 < t.size() && !t[k].line_start; ++k) {
        if (t[k].kind == TokKind::kName && t[k].text == "in" && t[k].depth == t[i].depth) {
          const std::string iterable = Canonical(t[k + 1].text, aliases);
          device_loop =
              std::find(rules.device_loop_iterables.begin(), rules.device_loop_iterables.end(),
                        iterable) != rules.device_loop_iterables.end();
          break;
        }
      }
      stack.push_back({t[i].indent, false, false, false, false, device_loop});
    }
    bool kernel = false;
    bool host_code_kernel = false;
    bool device_loop = false;
    for (const auto& o : stack) {
      scopes[i].in_function |= o.is_def;
      scopes[i].in_init |= o.is_init;
      kernel |= o.is_kernel;
      host_code_kernel |= o.kernel_has_host_code;
      device_loop |= o.is_device_loop;
    }
    scopes[i].in_kernel = kernel && (!host_code_kernel || device_loop);
  }
  return scopes;
}

}  // namespace kforge::guardrails
