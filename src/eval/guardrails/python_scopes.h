// What a Python rule needs to know about the code around a token: the names imports bind
// (aliases) and the scope it sits in (a function, __init__, a Triton or CuTe kernel).
// Internal to src/eval. Thread-safety: pure functions.
#ifndef KFORGE_SRC_EVAL_GUARDRAILS_PYTHON_SCOPES_H_
#define KFORGE_SRC_EVAL_GUARDRAILS_PYTHON_SCOPES_H_

#include <map>
#include <string>
#include <vector>

#include "kforge/target/backend.h"
#include "lexer.h"

namespace kforge::guardrails {

// Python imports: the name each import binds -> the dotted module path it stands for
// ("F" -> "torch.nn.functional", "np" -> "numpy", "Thread" -> "threading.Thread").
std::map<std::string, std::string> PythonAliases(const std::vector<Token>& t);

// `name` with its first component replaced by what that alias stands for ("F.relu" ->
// "torch.nn.functional.relu"); names with a leading dot and unknown names are returned as given.
std::string Canonical(const std::string& name, const std::map<std::string, std::string>& aliases);

struct PyScope {
  bool in_function = false;  // inside any def
  bool in_init = false;      // inside __init__ (construction: parameters may be made with torch)
  bool in_kernel = false;    // in a DSL kernel's device code (tensor methods are the DSL's)
};

// Scope of every token from `def` and `for` lines and indentation. A kernel is a function under
// a decorator of one of `rules.kernel_decorator_modules`; when `rules.device_loop_iterables`
// names iterables of the decorator's module, only the bodies of loops over them are kernel code.
std::vector<PyScope> PythonScopes(const std::vector<Token>& t,
                                  const std::map<std::string, std::string>& aliases,
                                  const StaticRuleSet& rules);

}  // namespace kforge::guardrails

#endif  // KFORGE_SRC_EVAL_GUARDRAILS_PYTHON_SCOPES_H_
