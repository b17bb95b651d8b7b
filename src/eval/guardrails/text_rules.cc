#include "text_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "precision_rule.h"
#include "token_queries.h"

namespace kforge::guardrails {

// Rules on string contents: paths into /proc and inherited descriptors, package installs,
// inline PTX with low-precision types.
void CheckStringRules(const std::vector<Token>& t, Lang lang, Findings& findings) {
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind != TokKind::kString) continue;
    const std::string& s = t[i].text;
    const int line = t[i].line;
    const std::string shown = fmt::format("\"{}\"", s.size() > 40 ? s.substr(0, 40) + "..." : s);
    if (s.find("/dev/fd") != std::string::npos || s.find("/proc/self/fd") != std::string::npos) {
      findings.Reject("inherited-descriptor", line, shown);
    } else if (s.find("/proc/self") != std::string::npos ||
               s.find("/proc/thread-self") != std::string::npos ||
               (s.find("/proc/") != std::string::npos && s.size() > 6 &&
                (IsDigit(s[s.find("/proc/") + 6]) || s[s.find("/proc/") + 6] == '{'))) {
      findings.Reject("harness-introspection", line, shown);
    }
    for (std::string_view install : {"pip install", "pip3 install", "-m pip", "conda install",
                                     "apt-get install", "apt install", "easy_install", "uv pip"}) {
      if (s.find(install) != std::string::npos) {
        findings.Reject("runtime-install", line, shown);
        break;
      }
    }
    if (lang == Lang::kC &&
        (s.find("mma") != std::string::npos || s.find("cvt") != std::string::npos)) {
      if (s.find(".tf32") != std::string::npos) Downcast(findings, Precision::kTf32, line, shown);
      if (s.find(".f16") != std::string::npos || s.find(".bf16") != std::string::npos) {
        Downcast(findings, Precision::kHalf, line, shown);
      }
      if (s.find(".e4m3") != std::string::npos || s.find(".e5m2") != std::string::npos) {
        Downcast(findings, Precision::kFp8, line, shown);
      }
    }
  }
}

// Numeric literals equal to one of the task's sizes used as a size: compared with (`i < 16384`,
// `x.shape[0] == 64`), given to range() or to a shape argument (torch.empty(64, 512),
// x.view(16, -1)), or assigned to a size-like name (`const int n = 16384`, `batch = 64`).
// Tile and block sizes assigned to other names, array bounds and #defines are not looked at:
// they collide with sizes such as 16 or 1024 far too often.
void CheckHardcodedShapes(const std::vector<Token>& t, Findings& findings) {
  const GuardrailOptions& options = findings.options();
  if (options.task_dimensions.empty()) return;
  const std::set<std::int64_t> dims(options.task_dimensions.begin(), options.task_dimensions.end());
  static const std::set<std::string_view> kShapeCalls = {
      "empty",     "zeros",    "ones",          "full",   "randn",
      "rand",      "view",     "reshape",       "expand", "new_empty",
      "new_zeros", "new_ones", "empty_strided", "range",  "broadcast_to"};
  static const std::set<std::string_view> kCompare = {"<", "<=", ">", ">=", "==", "!="};
  auto size_like = [](std::string_view name) {
    name = LastPart(name);
    static const std::set<std::string_view> kExact = {"n", "N", "M", "K", "B", "D",
                                                      "H", "W", "C", "L", "S"};
    if (kExact.count(name) != 0) return true;
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](char ch) { return static_cast<char>(std::tolower(ch)); });
    for (std::string_view part :
         {"size", "dim", "batch", "numel", "rows", "cols", "features", "length", "seq"}) {
      if (lower.find(part) != std::string::npos) return true;
    }
    return false;
  };
  // The call each open parenthesis belongs to.
  std::vector<std::string> calls;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const Token& tok = t[i];
    if (tok.kind == TokKind::kPunct) {
      if (tok.text == "(" || tok.text == "[" || tok.text == "{") {
        calls.push_back(tok.text == "(" && i > 0 && t[i - 1].kind == TokKind::kName
                            ? std::string(LastPart(t[i - 1].text))
                            : std::string());
      } else if ((tok.text == ")" || tok.text == "]" || tok.text == "}") && !calls.empty()) {
        calls.pop_back();
      }
      continue;
    }
    auto value = IntValue(tok);
    if (!value || dims.count(*value) == 0) continue;
    const bool compared =
        (i > 0 && kCompare.count(t[i - 1].text) != 0 && t[i - 1].kind == TokKind::kPunct) ||
        (i + 1 < t.size() && kCompare.count(t[i + 1].text) != 0 &&
         t[i + 1].kind == TokKind::kPunct);
    bool shape_argument = false;
    // Inside a shape call directly or in a tuple/list that is its argument.
    for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
      if (kShapeCalls.count(*it) != 0) {
        shape_argument = true;
        break;
      }
      if (!it->empty()) break;
    }
    const bool assigned = i >= 2 && PrevIs(t, i, "=") && t[i - 2].kind == TokKind::kName &&
                          size_like(t[i - 2].text) &&
                          (i + 1 >= t.size() || t[i + 1].text == ";" || t[i].line != t[i + 1].line);
    if (compared || shape_argument || assigned) {
      findings.Flag("hardcoded-shape", tok.line, tok.text,
                    fmt::format("(the task has a size {})", *value));
    }
  }
}

}  // namespace kforge::guardrails
