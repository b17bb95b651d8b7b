#include "kforge/eval/guardrails.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <map>
#include <set>
#include <utility>

namespace kforge {
namespace {

// ---------------------------------------------------------------------------------------------
// Lexing. Both lexers drop comments and return string literals as single tokens (their content
// apart), so rules see code only. Names are merged across `.` (and `::`, `->` in C) into one
// token: "torch.cuda.Event", "std::thread"; a member access on an expression (`x[0].half`,
// `f(x).sum`) becomes a name with a leading dot: ".half".

enum class TokKind { kName, kNumber, kString, kPunct };

struct Token {
  TokKind kind = TokKind::kPunct;
  std::string text;          // names joined with '.' ("::" kept in C); a string's content
  int line = 1;              // 1-based line where the token starts
  bool line_start = false;   // Python: first token of a logical line
  int indent = 0;            // Python: indentation of the token's logical line
  int depth = 0;             // bracket depth (Python) or brace depth (C) before the token
  std::size_t offset = 0;    // a string's content offset in the lexed text
};

bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Longest-match operators; anything else is one character.
constexpr std::array<std::string_view, 4> kOps3 = {"...", "<<=", ">>=", "**="};
constexpr std::array<std::string_view, 26> kOps2 = {
    "==", "!=", "<=", ">=", "->", "::", "+=", "-=", "*=", "/=", "%=", "&=", "|=",
    "^=", "@=", "**", "//", "<<", ">>", "&&", "||", "++", "--", ":=", "<<", ">>"};

std::size_t OperatorLength(std::string_view s, std::size_t i) {
  for (auto op : kOps3) {
    if (s.substr(i, 3) == op) return 3;
  }
  for (auto op : kOps2) {
    if (s.substr(i, 2) == op) return 2;
  }
  return 1;
}

// A number: digits, letters (hex, suffixes), '.', '_', digit separators, exponent signs.
std::size_t NumberEnd(std::string_view s, std::size_t i, bool c_like) {
  std::size_t j = i;
  while (j < s.size()) {
    const char c = s[j];
    if (IsIdentChar(c) || c == '.') {
      ++j;
    } else if ((c == '+' || c == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E' || s[j - 1] == 'p' ||
                                          s[j - 1] == 'P')) {
      ++j;
    } else if (c_like && c == '\'' && j + 1 < s.size() && IsIdentChar(s[j + 1])) {
      ++j;  // C++14 digit separator
    } else {
      break;
    }
  }
  return j;
}

void AdjustDepth(std::string_view op, int& depth) {
  if (op == "(" || op == "[" || op == "{") ++depth;
  if ((op == ")" || op == "]" || op == "}") && depth > 0) --depth;
}

// Python source to tokens, with logical-line starts and indentation (for scopes).
std::vector<Token> LexPython(std::string_view s) {
  std::vector<Token> out;
  int line = 1;
  int depth = 0;
  int col = 0;               // indentation measured on the current physical line so far
  bool line_has_token = false;
  bool new_logical = true;   // the next token starts a logical line
  int logical_indent = 0;
  auto emit = [&](Token t) {
    if (new_logical && depth == 0) {
      t.line_start = true;
      logical_indent = col;
      new_logical = false;
    }
    t.indent = logical_indent;
    t.depth = depth;
    line_has_token = true;
    out.push_back(std::move(t));
  };
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
      col = 0;
      line_has_token = false;
      if (depth == 0) new_logical = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
      if (!line_has_token) col += c == '\t' ? 8 - col % 8 : 1;
      ++i;
      continue;
    }
    if (c == '\\' && i + 1 < s.size() && (s[i + 1] == '\n' || s[i + 1] == '\r')) {
      i = s.find('\n', i);
      if (i == std::string_view::npos) break;
      ++i;
      ++line;
      line_has_token = true;  // a continuation line does not start a logical line
      continue;
    }
    if (c == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    // Strings, with an optional prefix (r, b, u, f and their pairs).
    std::size_t q = i;
    if (IsIdentStart(c)) {
      std::size_t j = i;
      while (j < s.size() && IsIdentChar(s[j])) ++j;
      std::string prefix(s.substr(i, j - i));
      std::transform(prefix.begin(), prefix.end(), prefix.begin(),
                     [](char ch) { return static_cast<char>(std::tolower(ch)); });
      static const std::set<std::string> kPrefixes = {"r", "u", "b", "f", "br", "rb", "fr", "rf"};
      if (j < s.size() && (s[j] == '"' || s[j] == '\'') && kPrefixes.count(prefix) != 0) {
        q = j;
      } else {
        emit({.kind = TokKind::kName, .text = std::string(s.substr(i, j - i)), .line = line});
        i = j;
        continue;
      }
    }
    if (s[q] == '"' || s[q] == '\'') {
      const char quote = s[q];
      const bool triple = s.substr(q, 3) == std::string(3, quote);
      std::size_t j = q + (triple ? 3 : 1);
      const std::size_t content = j;
      std::size_t end = s.size();
      const int start_line = line;
      while (j < s.size()) {
        if (s[j] == '\\' && j + 1 < s.size()) {
          if (s[j + 1] == '\n') ++line;
          j += 2;
          continue;
        }
        if (s[j] == '\n') {
          if (!triple) break;  // unterminated one-line string
          ++line;
        }
        if (s[j] == quote && (!triple || s.substr(j, 3) == std::string(3, quote))) {
          end = j;
          j += triple ? 3 : 1;
          break;
        }
        ++j;
      }
      if (end == s.size()) end = std::min(j, s.size());
      emit({.kind = TokKind::kString,
            .text = std::string(s.substr(content, end - content)),
            .line = start_line,
            .offset = content});
      i = j;
      continue;
    }
    if (IsDigit(c) || (c == '.' && i + 1 < s.size() && IsDigit(s[i + 1]))) {
      const std::size_t j = NumberEnd(s, i, false);
      emit({.kind = TokKind::kNumber, .text = std::string(s.substr(i, j - i)), .line = line});
      i = j;
      continue;
    }
    const std::size_t n = OperatorLength(s, i);
    Token t{.kind = TokKind::kPunct, .text = std::string(s.substr(i, n)), .line = line};
    emit(t);
    AdjustDepth(out.back().text, depth);
    i += n;
  }
  return out;
}

// C, C++, CUDA, HIP, SYCL or OpenCL C to tokens; `first_line` numbers the first line (code
// embedded in a Python string starts on the string's line). Token::depth is the brace depth.
std::vector<Token> LexC(std::string_view s, int first_line) {
  std::vector<Token> out;
  int line = first_line;
  int depth = 0;
  std::size_t i = 0;
  auto emit = [&](TokKind kind, std::string text, int at_line, std::size_t offset = 0) {
    out.push_back({.kind = kind, .text = std::move(text), .line = at_line, .depth = depth,
                   .offset = offset});
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || c == '\\') {
      ++i;
      continue;
    }
    if (s.substr(i, 2) == "//") {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (s.substr(i, 2) == "/*") {
      const std::size_t end = s.find("*/", i + 2);
      const std::size_t stop = end == std::string_view::npos ? s.size() : end + 2;
      line += static_cast<int>(std::count(s.begin() + i, s.begin() + stop, '\n'));
      i = stop;
      continue;
    }
    if (IsIdentStart(c)) {
      std::size_t j = i;
      while (j < s.size() && IsIdentChar(s[j])) ++j;
      std::string_view word = s.substr(i, j - i);
      if (j < s.size() && s[j] == '"' &&
          (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR")) {
        // Raw string R"delim( ... )delim".
        const std::size_t open = s.find('(', j);
        if (open != std::string_view::npos) {
          const std::string close = fmt::format("){}\"", s.substr(j + 1, open - j - 1));
          std::size_t end = s.find(close, open + 1);
          if (end == std::string_view::npos) end = s.size();
          emit(TokKind::kString, std::string(s.substr(open + 1, end - open - 1)), line, open + 1);
          line += static_cast<int>(std::count(s.begin() + i, s.begin() + end, '\n'));
          i = std::min(s.size(), end + close.size());
          continue;
        }
      }
      if (j < s.size() && (s[j] == '"' || s[j] == '\'') &&
          (word == "L" || word == "u" || word == "U" || word == "u8")) {
        i = j;  // encoding prefix of a string or character literal
        continue;
      }
      emit(TokKind::kName, std::string(word), line);
      i = j;
      continue;
    }
    if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < s.size() && s[j] != c && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      j = std::min(j, s.size());
      emit(c == '"' ? TokKind::kString : TokKind::kNumber, std::string(s.substr(i + 1, j - i - 1)),
           line, i + 1);
      i = std::min(s.size(), j + 1);
      continue;
    }
    if (IsDigit(c) || (c == '.' && i + 1 < s.size() && IsDigit(s[i + 1]))) {
      const std::size_t j = NumberEnd(s, i, true);
      emit(TokKind::kNumber, std::string(s.substr(i, j - i)), line);
      i = j;
      continue;
    }
    std::size_t n = OperatorLength(s, i);
    if (s.substr(i, 3) == "<<<" || s.substr(i, 3) == ">>>") n = 3;  // CUDA launch brackets
    std::string op(s.substr(i, n));
    if (op == "}" && depth > 0) --depth;
    emit(TokKind::kPunct, op, line);
    if (op == "{") ++depth;
    i += n;
  }
  return out;
}

// Joins `a . b`, `a :: b` and `a -> b` into one name token; a member access on an expression
// becomes ".b". `c_like` adds "::" and "->".
std::vector<Token> MergeNames(std::vector<Token> raw, bool c_like) {
  auto is_sep = [&](const Token& t) {
    return t.kind == TokKind::kPunct &&
           (t.text == "." || (c_like && (t.text == "::" || t.text == "->")));
  };
  std::vector<Token> out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    Token t = raw[i];
    const bool leading = is_sep(t) && i + 1 < raw.size() && raw[i + 1].kind == TokKind::kName;
    if (t.kind != TokKind::kName && !leading) {
      out.push_back(std::move(t));
      continue;
    }
    if (leading) {
      // `::name` is a global-namespace name; `.name`/`->name` a member of an expression.
      const bool global = t.text == "::" &&
                          (out.empty() || out.back().kind != TokKind::kName);
      t.text = global ? raw[i + 1].text : "." + raw[i + 1].text;
      t.kind = TokKind::kName;
      ++i;
    }
    while (i + 2 < raw.size() && is_sep(raw[i + 1]) && raw[i + 2].kind == TokKind::kName) {
      t.text += raw[i + 1].text == "->" ? "." : raw[i + 1].text;
      t.text += raw[i + 2].text;
      i += 2;
    }
    out.push_back(std::move(t));
  }
  return out;
}

// The last component of a merged name: "torch.cuda.Event" -> "Event", "std::thread" -> "thread".
std::string_view LastPart(std::string_view name) {
  const std::size_t dot = name.find_last_of(".:");
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}
// Everything before the last component, without the separator ("" if none).
std::string_view Receiver(std::string_view name) {
  const std::size_t dot = name.find_last_of(".:");
  if (dot == std::string_view::npos) return {};
  std::size_t end = dot;
  while (end > 0 && name[end - 1] == ':') --end;
  return name.substr(0, end);
}
std::string_view FirstPart(std::string_view name) {
  return name.substr(0, name.find_first_of(".:"));
}
bool StartsWith(std::string_view s, std::string_view prefix) { return s.starts_with(prefix); }
// `name` is the module `module` or something inside it ("inspect", "inspect.stack").
bool InModule(std::string_view name, std::string_view module) {
  return name == module || (name.starts_with(module) && name.size() > module.size() &&
                            name[module.size()] == '.');
}

std::optional<std::int64_t> IntValue(const Token& t) {
  if (t.kind != TokKind::kNumber) return std::nullopt;
  std::string digits;
  for (char c : t.text) {
    if (c == '_' || c == '\'') continue;
    digits += c;
  }
  while (!digits.empty() && (digits.back() == 'u' || digits.back() == 'U' || digits.back() == 'l' ||
                             digits.back() == 'L')) {
    digits.pop_back();
  }
  std::int64_t value = 0;
  int base = 10;
  std::string_view body = digits;
  if (body.starts_with("0x") || body.starts_with("0X")) {
    base = 16;
    body.remove_prefix(2);
  }
  auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), value, base);
  if (ec != std::errc() || ptr != body.data() + body.size()) return std::nullopt;
  return value;
}

// Python imports: the name each import binds -> the dotted module path it stands for
// ("F" -> "torch.nn.functional", "np" -> "numpy", "Thread" -> "threading.Thread").
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

// ---------------------------------------------------------------------------------------------
// Findings and the texts the model reads.

enum class Precision { kTf32, kHalf, kFp8 };

std::string_view PrecisionText(Precision p) {
  switch (p) {
    case Precision::kTf32: return "TF32 (10-bit mantissa matrix math)";
    case Precision::kHalf: return "fp16/bf16";
    case Precision::kFp8: return "fp8";
  }
  return "";
}

std::string_view PolicyText(PrecisionPolicy policy) {
  switch (policy) {
    case PrecisionPolicy::kStrict: return "strict: fp32 arithmetic, checked at 1e-4";
    case PrecisionPolicy::kTf32: return "tf32: fp32 storage, TF32 matrix math allowed, 1e-3";
    case PrecisionPolicy::kMixed: return "mixed: fp16/bf16/TF32 compute allowed, 1e-2";
  }
  return "";
}

// Why each rule exists and what to do instead; the finding's message starts with what was found.
std::string_view RuleText(std::string_view rule) {
  static const std::map<std::string_view, std::string_view> kTexts = {
      {"reference-op-call",
       "computes with PyTorch's own operators in the forward path. The evaluation compares your "
       "kernel with PyTorch, so the result must come from your kernel, not from the reference "
       "framework. Compute it in your own kernel; use torch only to allocate outputs "
       "(torch.empty, torch.empty_like, torch.zeros) and for shapes, strides and views."},
      {"stream-creation",
       "creates or switches to another stream or command queue. Work on a side stream escapes the "
       "timer, which waits only on the stream it is given. Launch every kernel on the stream the "
       "harness passes in (the `stream` argument, or PyTorch's current stream)."},
      {"thread-creation",
       "starts a thread or a process. Work in the background escapes the timed call and can race "
       "the checker. Do all work inside the call (OpenMP inside a cpu/cpp kernel is fine)."},
      {"graph-capture",
       "captures or replays a CUDA graph. Replayed work hides launch cost and can replay stale "
       "results; the harness measures graph replay itself. Launch your kernels directly."},
      {"timer-patch",
       "assigns to or patches an attribute of a module (torch, time, builtins, ...) or a timing "
       "function. Changing timers or framework functions falsifies the measurement. Leave the "
       "framework and the harness as they are; change only your own code."},
      {"harness-introspection",
       "looks into the interpreter or the process (loaded modules, stack frames, the garbage "
       "collector, /proc). A candidate must not read the harness's state, such as its reference "
       "outputs. Use only the inputs passed to your function."},
      {"inherited-descriptor",
       "writes to, opens or reads a file descriptor it did not open. Inherited descriptors belong "
       "to the harness (its result channel). Return results only through the output tensors."},
      {"output-cache",
       "keeps results between calls keyed on tensor identity (data_ptr, id, _version) or on "
       "shapes. Every call gets fresh inputs, possibly at the same address, so a cached result is "
       "a wrong answer that only looks fast. Compute the output on every call; caching compiled "
       "kernels or launch configurations is fine."},
      {"exception-fallback",
       "catches errors around the computation. A fallback hides a failing kernel and may compute "
       "the result another way. Let errors propagate (from native code, return a non-zero code) "
       "and fix the kernel instead."},
      {"precision-downcast",
       "computes in lower precision than the task's precision policy allows. Lower precision is "
       "faster because it does less work, not because the kernel is better. Keep the policy's "
       "arithmetic (in Triton: tl.dot(..., input_precision=\"ieee\") for fp32), or evaluate under "
       "a policy that allows it (--policy tf32 or mixed)."},
      {"runtime-install",
       "installs packages or runs programs at run time. The evaluation has no network and a "
       "candidate must not change its environment. Use only what the target provides."},
      {"hardcoded-shape",
       "uses one of the task's sizes as a literal. The task asks for a kernel that works for any "
       "size; one written for a single size fails or misleads on another. Read sizes from the "
       "tensors' shapes."},
  };
  auto it = kTexts.find(rule);
  return it == kTexts.end() ? std::string_view() : it->second;
}

// Which language a token stream is, for rules that differ.
enum class Lang { kPython, kC };

class Checker {
 public:
  Checker(const GuardrailOptions& options, ProgrammingModel model, CandidateKind kind)
      : options_(options), model_(model), kind_(kind) {}

  void Add(std::string_view rule, GuardrailSeverity severity, int line, std::string found,
           std::string detail = {}) {
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
  void Reject(std::string_view rule, int line, std::string found, std::string detail = {}) {
    Add(rule, GuardrailSeverity::kReject, line, std::move(found), std::move(detail));
  }
  void Flag(std::string_view rule, int line, std::string found, std::string detail = {}) {
    Add(rule, GuardrailSeverity::kFlag, line, std::move(found), std::move(detail));
  }

  // A lower precision than fp32: rejected under strict; under tf32/mixed flagged only beyond
  // what the policy allows. `implicit`: a default (Triton's tl.dot on fp32), flagged only.
  void Downcast(Precision p, int line, std::string found, bool implicit = false) {
    if (p == Precision::kHalf && options_.task_low_precision) return;
    const std::string detail = fmt::format("(uses {}; the task's policy is {})", PrecisionText(p),
                                           PolicyText(options_.policy));
    switch (options_.policy) {
      case PrecisionPolicy::kStrict:
        if (implicit) {
          Flag("precision-downcast", line, std::move(found), detail);
        } else {
          Reject("precision-downcast", line, std::move(found), detail);
        }
        return;
      case PrecisionPolicy::kTf32:
        if (p != Precision::kTf32) Flag("precision-downcast", line, std::move(found), detail);
        return;
      case PrecisionPolicy::kMixed:
        if (p == Precision::kFp8) Flag("precision-downcast", line, std::move(found), detail);
        return;
    }
  }

  void CheckPython(const std::vector<Token>& t);
  void CheckC(const std::vector<Token>& t, bool embedded_in_module);
  void CheckStrings(const std::vector<Token>& t, Lang lang);
  void CheckHardcodedShapes(const std::vector<Token>& t);

  GuardrailReport Report() {
    std::stable_sort(findings_.begin(), findings_.end(),
                     [](const auto& a, const auto& b) { return a.line < b.line; });
    return GuardrailReport{std::move(findings_)};
  }

 private:
  static constexpr int kMaxPerRule = 5;
  const GuardrailOptions& options_;
  ProgrammingModel model_;
  CandidateKind kind_;
  std::vector<GuardrailFinding> findings_;
  std::set<std::pair<std::string, int>> seen_;
  std::map<std::string, int> per_rule_;
};

bool IsCall(const std::vector<Token>& t, std::size_t i) {
  return i + 1 < t.size() && t[i + 1].kind == TokKind::kPunct && t[i + 1].text == "(";
}
bool NextIs(const std::vector<Token>& t, std::size_t i, std::string_view text) {
  return i + 1 < t.size() && t[i + 1].kind == TokKind::kPunct && t[i + 1].text == text;
}
bool PrevIs(const std::vector<Token>& t, std::size_t i, std::string_view text) {
  return i > 0 && t[i - 1].kind == TokKind::kPunct && t[i - 1].text == text;
}
// Index of the token closing the bracket opened at `open`, or t.size().
std::size_t Matching(const std::vector<Token>& t, std::size_t open) {
  int depth = 0;
  for (std::size_t k = open; k < t.size(); ++k) {
    if (t[k].kind != TokKind::kPunct) continue;
    if (t[k].text == "(" || t[k].text == "[" || t[k].text == "{") ++depth;
    if (t[k].text == ")" || t[k].text == "]" || t[k].text == "}") {
      if (--depth == 0) return k;
    }
  }
  return t.size();
}

bool IsAssignOp(const Token& t) {
  static const std::set<std::string_view> kOps = {"=",  "+=", "-=", "*=", "/=", "//=", "%=",
                                                  "&=", "|=", "^=", "@=", "**=", ">>=", "<<="};
  return t.kind == TokKind::kPunct && kOps.count(t.text) != 0;
}

// torch.<leaf>(...) calls that allocate, describe or configure rather than compute.
const std::set<std::string_view>& TorchAllowedLeaves() {
  static const std::set<std::string_view> kAllowed = {
      "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
      "full_like", "arange", "tensor", "as_tensor", "from_numpy", "device", "Size", "no_grad",
      "inference_mode", "enable_grad", "set_grad_enabled", "is_tensor", "is_floating_point",
      "numel", "manual_seed", "get_default_dtype", "finfo", "iinfo", "promote_types",
      "result_type", "is_grad_enabled", "Generator", "dtype", "is_complex", "get_device"};
  return kAllowed;
}
// Namespaces under torch. whose calls compute with the reference framework.
constexpr std::array<std::string_view, 14> kTorchComputeNamespaces = {
    "torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.", "torch.sparse.",
    "torch.ops.aten.", "torch.ops.prims.", "torch._C.", "torch._refs.", "torch._prims.",
    "torch.Tensor.", "torch.jit.", "torch._dynamo.", "torch._inductor."};

// Tensor methods that compute (x.sum(), a.mm(b)); views, copies and queries are not listed.
const std::set<std::string_view>& ComputeMethods() {
  static const std::set<std::string_view> kMethods = {
      "mm", "bmm", "matmul", "addmm", "addmm_", "baddbmm", "addbmm", "addmv", "mv", "dot",
      "einsum", "softmax", "log_softmax", "relu", "relu_", "sigmoid", "sigmoid_", "tanh",
      "tanh_", "gelu", "silu", "exp", "exp_", "log", "sum", "mean", "var", "std", "norm", "amax",
      "amin", "max", "min", "logsumexp", "cumsum", "cumprod", "prod", "clamp", "clamp_",
      "clamp_min", "clamp_max", "sqrt", "rsqrt", "pow", "erf", "reciprocal", "leaky_relu",
      "hardtanh", "conv2d", "linear", "layer_norm", "group_norm", "batch_norm", "argmax",
      "argmin", "topk", "sort", "cross_entropy", "mish", "softplus", "elu", "selu", "hardswish",
      "triu", "tril"};
  return kMethods;
}

// nn classes that hold parameters only (constructing and holding them is not computing).
bool IsParameterHolder(std::string_view leaf) {
  return leaf == "Parameter" || leaf == "ParameterList" || leaf == "ParameterDict" ||
         leaf == "Buffer" || leaf == "Module" || leaf == "ModuleList" || leaf == "ModuleDict";
}

struct PyScope {
  bool in_function = false;  // inside any def
  bool in_init = false;      // inside __init__ (construction: parameters may be made with torch)
  bool in_kernel = false;    // inside a @triton.jit / CuTe kernel (tensor methods are Triton's)
};

// Scope of every token from `def` lines and indentation.
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

void Checker::CheckPython(const std::vector<Token>& t) {
  const auto aliases = PythonAliases(t);
  const auto scopes = PythonScopes(t, aliases);
  const bool module = kind_ == CandidateKind::kModule;
  auto canonical = [&](std::size_t i) { return Canonical(t[i].text, aliases); };
  auto is_module_name = [&](std::string_view name) {
    return aliases.count(std::string(FirstPart(name))) != 0;
  };

  // Pre-pass: load_inline extensions, nn submodules of the model, persistent containers.
  std::set<std::string> extensions;     // names bound to a compiled extension
  std::set<std::string> nn_submodules;  // "self.gemm" bound to nn.Linear(...)
  std::set<std::string> containers;     // dicts that live across calls: module level or self.*
  bool identity_cache_decorator = false;
  for (std::size_t i = 0; i + 2 < t.size(); ++i) {
    if (t[i].kind != TokKind::kName || !NextIs(t, i, "=")) continue;
    const std::string value = t[i + 2].kind == TokKind::kName ? canonical(i + 2) : t[i + 2].text;
    const std::string_view leaf = LastPart(value);
    if (t[i + 2].kind == TokKind::kName && IsCall(t, i + 2) &&
        (leaf == "load_inline" || (leaf == "load" && StartsWith(value, "torch.utils")))) {
      extensions.insert(t[i].text);
    } else if (t[i + 2].kind == TokKind::kName && extensions.count(value) != 0) {
      extensions.insert(t[i].text);
    } else if (StartsWith(t[i].text, "self.") && StartsWith(value, "torch.nn.") &&
               IsCall(t, i + 2) && !IsParameterHolder(leaf)) {
      nn_submodules.insert(t[i].text);
    }
    const bool persistent = !scopes[i].in_function || StartsWith(t[i].text, "self.");
    const bool empty_dict = t[i + 2].text == "{" && i + 3 < t.size() && t[i + 3].text == "}";
    if (persistent && (empty_dict || leaf == "dict" || leaf == "OrderedDict" ||
                       leaf == "defaultdict" || StartsWith(value, "weakref."))) {
      containers.insert(t[i].text);
    }
  }
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind != TokKind::kName) continue;
    const std::string c = canonical(i);
    if (c == "functools.lru_cache" || c == "functools.cache") identity_cache_decorator = true;
  }
  // Identity keys (data_ptr, id, _version): a cache keyed on them is rejected when the file
  // keeps results across calls, flagged otherwise.
  const bool persistent_state = !containers.empty() || identity_cache_decorator;

  for (std::size_t i = 0; i < t.size(); ++i) {
    const Token& tok = t[i];
    const int line = tok.line;
    if (tok.kind == TokKind::kPunct) {
      if (module && !options_.allow_reference_ops && (tok.text == "@" || tok.text == "@=") &&
          !tok.line_start && !scopes[i].in_init) {
        Reject("reference-op-call", line, fmt::format("{} (matrix product operator)", tok.text),
               "(the @ operator runs torch.matmul on tensors)");
      }
      continue;
    }
    if (tok.kind != TokKind::kName) continue;
    const std::string c = canonical(i);
    const std::string_view leaf = LastPart(c);
    const bool call = IsCall(t, i);
    const std::string shown = call ? c + "(" : c;
    // Module-based rules need the module imported: a local variable may share its name.
    const bool imported = is_module_name(tok.text);

    // reference-op-call (not in __init__, where parameters are made, nor in Triton/CuTe kernels)
    if (module && !options_.allow_reference_ops && imported && c == "torch.compile") {
      Reject("reference-op-call", line, shown, "(torch.compile generates the kernels itself)");
    }
    if (module && !options_.allow_reference_ops && !scopes[i].in_init &&
        !scopes[i].in_kernel && call) {
      bool reference = false;
      if (StartsWith(c, "torch.")) {
        const std::string_view rest = std::string_view(c).substr(6);
        if (rest.find('.') == std::string_view::npos) {
          reference = TorchAllowedLeaves().count(rest) == 0;
        } else {
          for (auto ns : kTorchComputeNamespaces) reference |= StartsWith(c, ns);
          // nn modules made and called in forward (nn.ReLU()(x)); parameters are not compute.
          reference |= StartsWith(c, "torch.nn.") && rest.find('.', 3) == std::string_view::npos &&
                       !IsParameterHolder(leaf) && !StartsWith(c, "torch.nn.init");
        }
      } else if (nn_submodules.count(c) != 0 ||
                 (leaf == "forward" && nn_submodules.count(std::string(Receiver(c))) != 0)) {
        reference = true;
      } else if (ComputeMethods().count(leaf) != 0 && (c[0] == '.' || !Receiver(c).empty())) {
        const std::string receiver(Receiver(c));
        const bool on_module = c[0] != '.' && is_module_name(c);
        const bool on_extension =
            extensions.count(receiver) != 0 || extensions.count(std::string(FirstPart(c))) != 0;
        reference = !on_module && !on_extension && receiver != "self";
      }
      if (reference) Reject("reference-op-call", line, shown);
    }

    // stream-creation
    if ((call && (c == "torch.cuda.Stream" || c == "torch.cuda.streams.Stream" ||
                  c == "torch.Stream" || c == "torch.cuda.ExternalStream" ||
                  c == "torch.cuda.stream" || c == "torch.cuda.set_stream" ||
                  c == "cupy.cuda.Stream" || leaf == "CommandQueue")) ||
        c == "torch.cuda.StreamContext") {
      Reject("stream-creation", line, shown);
    }

    // thread-creation
    static const std::set<std::string_view> kThreadCalls = {
        "threading.Thread", "threading.Timer", "_thread.start_new_thread", "_thread.start_new",
        "os.fork", "os.forkpty", "os.posix_spawn", "os.posix_spawnp", "os.register_at_fork",
        "pty.fork"};
    if (imported && ((call && kThreadCalls.count(c) != 0) || InModule(c, "multiprocessing") ||
                     InModule(c, "torch.multiprocessing") || InModule(c, "concurrent.futures") ||
                     (call && StartsWith(c, "os.spawn")))) {
      Reject("thread-creation", line, shown);
    }

    // graph-capture
    if (StartsWith(c, "torch.cuda.graph") || c == "torch.cuda.CUDAGraph" ||
        c == "torch.cuda.make_graphed_callables" || leaf == "capture_begin" ||
        leaf == "capture_end" || StartsWith(c, "cupy.cuda.graph")) {
      Reject("graph-capture", line, shown);
    }

    // timer-patch (and framework monkey-patching); precision flags are assignments too.
    // An attribute of an imported module (or of the OpenCL objects handed to launch()).
    const bool module_attr =
        is_module_name(tok.text) || (kind_ == CandidateKind::kOpenCl &&
                                     (StartsWith(tok.text, "cl.") || StartsWith(tok.text, "queue.") ||
                                      StartsWith(tok.text, "program.")));
    if (i + 1 < t.size() && IsAssignOp(t[i + 1]) && tok.text.find('.') != std::string::npos &&
        module_attr) {
      const bool precision = leaf.find("allow_tf32") != std::string_view::npos ||
                             leaf.find("reduced_precision") != std::string_view::npos ||
                             leaf.find("fp32_precision") != std::string_view::npos;
      if (precision) {
        const bool disabling = i + 2 < t.size() && t[i + 2].text == "False";
        if (!disabling) {
          Downcast(leaf.find("tf32") != std::string_view::npos ? Precision::kTf32
                                                               : Precision::kHalf,
                   line, c + " = ...");
        }
      } else if (StartsWith(c, "torch.backends.")) {
        Flag("timer-patch", line, c + " = ...");
      } else {
        Reject("timer-patch", line, c + " = ...");
      }
    }
    if (call && (c == "setattr" || c == "delattr") && i + 2 < t.size() &&
        t[i + 2].kind == TokKind::kName && is_module_name(t[i + 2].text)) {
      Reject("timer-patch", line, fmt::format("{}({}, ...)", c, canonical(i + 2)));
    }
    if ((imported && (InModule(c, "unittest.mock") || c == "importlib.reload" ||
                      c == "sys.settrace" || c == "sys.setprofile")) ||
        tok.text == "__builtins__") {
      Reject("timer-patch", line, shown);
    }
    // __import__("inspect") and friends: a sensitive module imported by a computed name.
    if (call && (c == "__import__" || c == "importlib.import_module") && i + 2 < t.size() &&
        t[i + 2].kind == TokKind::kString) {
      static const std::set<std::string_view> kSensitive = {
          "sys", "inspect", "gc", "subprocess", "threading", "multiprocessing", "ctypes",
          "builtins", "pip", "_thread", "kforge_runner", "__main__", "traceback"};
      if (kSensitive.count(FirstPart(t[i + 2].text)) != 0) {
        Reject("harness-introspection", line, fmt::format("{}(\"{}\")", c, t[i + 2].text));
      }
    }

    // harness-introspection
    static const std::set<std::string_view> kIntrospection = {
        "sys._getframe", "sys._current_frames", "gc.get_objects", "gc.get_referrers",
        "gc.get_referents", "traceback.extract_stack", "traceback.walk_stack",
        "traceback.format_stack", "traceback.print_stack", "threading.enumerate"};
    static const std::set<std::string_view> kFrameAttributes = {
        "f_back", "f_globals", "f_locals", "f_builtins", "tb_frame", "gi_frame", "cr_frame",
        "__globals__", "__subclasses__", "__closure__"};
    if ((imported && (InModule(c, "sys.modules") || kIntrospection.count(c) != 0 ||
                      InModule(c, "inspect") || InModule(c, "__main__") ||
                      InModule(c, "kforge_runner"))) ||
        kFrameAttributes.count(leaf) != 0) {
      Reject("harness-introspection", line, shown);
    } else if (imported && InModule(c, "ctypes")) {
      Flag("harness-introspection", line, shown, "(ctypes reads and writes raw process memory)");
    }

    // inherited-descriptor: a descriptor number >= 3 given as a literal.
    static const std::set<std::string_view> kFdCalls = {
        "os.write", "os.fdopen", "os.read", "os.dup", "os.dup2", "os.fstat", "os.lseek",
        "os.ftruncate", "os.fsync", "open", "io.open", "socket.fromfd", "socket.socket",
        "os.set_inheritable", "os.get_inheritable", "os.set_blocking", "os.close",
        "os.closerange", "os.sendfile", "os.pwrite", "os.writev", "io.FileIO"};
    if (call && kFdCalls.count(c) != 0 && i + 2 < t.size()) {
      std::size_t arg = i + 2;
      if (c == "socket.socket") {
        // socket.socket(fileno=3)
        arg = t.size();
        for (std::size_t k = i + 2; k < Matching(t, i + 1); ++k) {
          if (t[k].text == "fileno" && NextIs(t, k, "=")) arg = k + 2;
        }
      }
      if (arg < t.size()) {
        auto fd = IntValue(t[arg]);
        if (fd && *fd >= 3 && *fd < 1024) {
          Reject("inherited-descriptor", line, fmt::format("{}({}, ...)", c, *fd));
        }
      }
    }

    // output-cache
    const bool identity_key = (call && c == "id") || (call && leaf == "data_ptr") ||
                              leaf == "_version" || leaf == "_cdata" ||
                              (call && leaf == "untyped_storage");
    if (module && identity_key && scopes[i].in_function && !scopes[i].in_init) {
      if (persistent_state) {
        Reject("output-cache", line, shown,
               "(a tensor's identity used while the module keeps state across calls)");
      } else {
        Flag("output-cache", line, shown, "(a tensor's identity is read in the forward path)");
      }
    }
    if (module && containers.count(c) != 0 && NextIs(t, i, "[") && scopes[i].in_function) {
      const std::size_t close = Matching(t, i + 1);
      for (std::size_t k = i + 2; k < close; ++k) {
        if (t[k].kind == TokKind::kName && (LastPart(t[k].text) == "shape" ||
                                            LastPart(t[k].text) == "size")) {
          Flag("output-cache", line, c + "[...shape...]",
               "(a dictionary kept across calls is indexed by a tensor's shape)");
        }
      }
    }
    if (module && identity_cache_decorator && (c == "functools.lru_cache" || c == "functools.cache")) {
      Flag("output-cache", line, shown, "(functools caches key tensors by identity)");
    }

    // exception-fallback
    if (tok.text == "try" && tok.line_start && scopes[i].in_function) {
      // Each handler of this try must re-raise at once; anything else is a fallback.
      for (std::size_t k = i + 1; k < t.size(); ++k) {
        if (!t[k].line_start) continue;
        if (t[k].indent < tok.indent) break;
        if (t[k].indent > tok.indent) continue;
        if (t[k].text != "except" && t[k].text != "else" && t[k].text != "finally") break;
        if (t[k].text != "except") continue;
        std::size_t body = k + 1;
        while (body < t.size() && !(t[body].kind == TokKind::kPunct && t[body].text == ":" &&
                                    t[body].depth == 0)) {
          ++body;
        }
        ++body;
        if (body >= t.size() || t[body].text != "raise") {
          Reject("exception-fallback", t[k].line,
                 fmt::format("try: ... except (line {})", t[k].line));
        }
      }
    }
    if (call && c == "contextlib.suppress") Reject("exception-fallback", line, shown);

    // precision-downcast
    static const std::set<std::string_view> kHalfNames = {
        "torch.float16", "torch.half", "torch.bfloat16", "triton.language.float16",
        "triton.language.bfloat16", "numpy.float16", "numpy.half", "torch.complex32",
        "cutlass.Float16", "cutlass.BFloat16"};
    if (kHalfNames.count(c) != 0) Downcast(Precision::kHalf, line, shown);
    if (call && tok.text[0] == '.' && (leaf == "half" || leaf == "bfloat16")) {
      Downcast(Precision::kHalf, line, shown);
    } else if (call && !Receiver(c).empty() && !is_module_name(c) &&
               (leaf == "half" || leaf == "bfloat16")) {
      Downcast(Precision::kHalf, line, shown);
    }
    if (leaf.find("float8") != std::string_view::npos || StartsWith(leaf, "Float8")) {
      Downcast(Precision::kFp8, line, shown);
    }
    if (call && (c == "torch.autocast" || StartsWith(c, "torch.cuda.amp") ||
                 StartsWith(c, "torch.amp") || StartsWith(c, "torch.cpu.amp"))) {
      Downcast(Precision::kHalf, line, shown);
    }
    if (call && c == "torch.set_float32_matmul_precision" && i + 2 < t.size() &&
        t[i + 2].kind == TokKind::kString && t[i + 2].text != "highest") {
      Downcast(t[i + 2].text == "medium" ? Precision::kHalf : Precision::kTf32, line,
               fmt::format("{}(\"{}\")", c, t[i + 2].text));
    }
    if ((tok.text == "allow_tf32" || tok.text == "input_precision") && NextIs(t, i, "=") &&
        i + 2 < t.size()) {
      const Token& v = t[i + 2];
      if ((tok.text == "allow_tf32" && v.text == "True") ||
          (tok.text == "input_precision" && v.kind == TokKind::kString &&
           StartsWith(v.text, "tf32"))) {
        Downcast(Precision::kTf32, line, fmt::format("{}={}", tok.text, v.text));
      }
    }
    if (call && c == "triton.language.dot" && model_ == ProgrammingModel::kTriton) {
      // tl.dot on fp32 operands computes in TF32 unless told otherwise.
      const std::size_t close = Matching(t, i + 1);
      bool explicit_precision = false;
      for (std::size_t k = i + 2; k < close; ++k) {
        explicit_precision |= t[k].text == "input_precision" || t[k].text == "allow_tf32";
      }
      if (!explicit_precision) {
        Downcast(Precision::kTf32, line, "tl.dot(...) without input_precision", true);
      }
    }

    // runtime-install
    static const std::set<std::string_view> kProcessCalls = {"os.system", "os.popen", "pip.main",
                                                             "pty.spawn", "os.startfile"};
    if (imported && (InModule(c, "subprocess") || (call && kProcessCalls.count(c) != 0) ||
                     (call && StartsWith(c, "os.exec")) || InModule(c, "pip") ||
                     InModule(c, "ensurepip") || InModule(c, "distutils.spawn"))) {
      Reject("runtime-install", line, shown);
    }
  }
}

// Native code (C, C++, CUDA, HIP, SYCL, OpenCL C), or C++ embedded in a module candidate.
void Checker::CheckC(const std::vector<Token>& t, bool embedded_in_module) {
  // Mutable state that survives calls: a function-level `static` that is not const.
  bool mutable_static = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    // (`schedule(static)` of an OpenMP pragma is no storage class.)
    if (t[i].kind == TokKind::kName && t[i].text == "static" && t[i].depth > 0 &&
        !PrevIs(t, i, "(") &&
        !(i + 1 < t.size() && (t[i + 1].text == "const" || t[i + 1].text == "constexpr" ||
                               t[i + 1].text == "__shared__" || t[i + 1].text == "__device__"))) {
      mutable_static = true;
      Flag("output-cache", t[i].line, "static (inside a function)",
           "(function-level static state survives between calls)");
    }
    if (t[i].kind == TokKind::kName &&
        (LastPart(t[i].text) == "unordered_map" || LastPart(t[i].text) == "map")) {
      mutable_static |= t[i].depth == 0;
    }
  }
  for (std::size_t i = 0; i < t.size(); ++i) {
    const Token& tok = t[i];
    const int line = tok.line;
    if (tok.kind == TokKind::kPunct) {
      // catch (...) — a catch-all around the launch.
      if (tok.text == "..." && PrevIs(t, i, "(") && i >= 2 && t[i - 2].text == "catch") {
        Reject("exception-fallback", line, "catch (...)");
      }
      // Output cache: an input's data pointer compared with remembered state.
      if ((tok.text == "==" || tok.text == "!=") && mutable_static && i > 0 && i + 1 < t.size()) {
        const auto is_pointer = [](const Token& x) {
          return x.kind == TokKind::kName &&
                 (LastPart(x.text) == "data" || LastPart(x.text) == "data_ptr");
        };
        if (is_pointer(t[i - 1]) || is_pointer(t[i + 1]) ||
            (i + 2 < t.size() && is_pointer(t[i + 2]) && t[i + 1].text == "(")) {
          Reject("output-cache", line, fmt::format("... {} ...data", tok.text),
                 "(a data pointer compared with state kept from an earlier call)");
        }
      }
      continue;
    }
    if (tok.kind != TokKind::kName) continue;
    const std::string& c = tok.text;
    const std::string_view leaf = LastPart(c);
    const bool call = IsCall(t, i);
    const std::string shown = call ? c + "(" : c;

    // reference-op-call: torch::/at:: operators (only reachable from load_inline code).
    if (!options_.allow_reference_ops && call &&
        (StartsWith(c, "torch::") || StartsWith(c, "at::"))) {
      const std::string_view rest =
          std::string_view(c).substr(StartsWith(c, "at::") ? 4 : 7);
      static const std::set<std::string_view> kAllowed = {
          "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like",
          "full", "full_like", "from_blob", "tensor", "arange", "parallel_for", "get_num_threads",
          "Device", "device", "TensorOptions", "dtype", "IntArrayRef", "Scalar", "Tensor",
          "autocast", "NoGradGuard", "InferenceMode", "get_num_interop_threads", "kCPU", "kCUDA"};
      const bool leaf_op = rest.find("::") == std::string_view::npos && kAllowed.count(rest) == 0;
      if (leaf_op || StartsWith(rest, "nn::functional::") || StartsWith(rest, "native::") ||
          StartsWith(rest, "linalg::") || StartsWith(rest, "fft::") || StartsWith(rest, "_ops::") ||
          StartsWith(rest, "cpu::") || StartsWith(rest, "special::")) {
        Reject("reference-op-call", line, shown);
      }
    }
    if (embedded_in_module && !options_.allow_reference_ops && call && c[0] == '.' &&
        ComputeMethods().count(leaf) != 0) {
      Reject("reference-op-call", line, shown);
    }
    if (StartsWith(c, "cublas") || StartsWith(c, "cudnn") || StartsWith(c, "hipblas") ||
        StartsWith(c, "rocblas") || StartsWith(c, "miopen")) {
      if (call) Flag("reference-op-call", line, shown, "(a vendor library computes this, not your kernel)");
    }

    // stream-creation
    if (StartsWith(c, "cudaStreamCreate") || StartsWith(c, "hipStreamCreate") ||
        StartsWith(c, "cuStreamCreate") || leaf == "getStreamFromPool" ||
        c == "cudaStreamPerThread" || c == "hipStreamPerThread" ||
        c == "CU_STREAM_PER_THREAD" || StartsWith(c, "clCreateCommandQueue")) {
      Reject("stream-creation", line, shown);
    }

    // thread-creation
    static const std::set<std::string_view> kThreadTypes = {"std::thread", "std::jthread",
                                                            "std::async", "boost::thread"};
    static const std::set<std::string_view> kThreadCalls = {
        "pthread_create", "fork", "vfork", "clone", "clone3", "posix_spawn", "posix_spawnp",
        "CreateThread", "_beginthread", "_beginthreadex", "thrd_create"};
    if (kThreadTypes.count(c) != 0 || (call && kThreadCalls.count(c) != 0)) {
      Reject("thread-creation", line, shown);
    }

    // graph-capture
    if (StartsWith(c, "cudaGraph") || StartsWith(c, "cuGraph") || StartsWith(c, "hipGraph") ||
        c.find("BeginCapture") != std::string::npos ||
        c.find("EndCapture") != std::string::npos || leaf == "CUDAGraph") {
      Reject("graph-capture", line, shown);
    }

    // timer-patch: defining (interposing) a timing or event function, or symbol interposition.
    static const std::set<std::string_view> kTimingFunctions = {
        "cudaEventElapsedTime", "cudaEventRecord", "cudaEventSynchronize", "cudaEventQuery",
        "cudaDeviceSynchronize", "cudaStreamSynchronize", "cuEventElapsedTime", "hipEventElapsedTime",
        "hipEventRecord", "clock_gettime", "gettimeofday", "clGetEventProfilingInfo",
        "clWaitForEvents", "clFinish"};
    if (kTimingFunctions.count(c) != 0 && call && i > 0 && t[i - 1].kind == TokKind::kName &&
        t[i - 1].text != "return" && t[i - 1].text != "else") {
      Reject("timer-patch", line, fmt::format("a definition of {}", c),
             "(defining it interposes the harness's own timing function)");
    }
    if (c == "RTLD_NEXT" || c == "dlsym" || c == "LD_PRELOAD") {
      Reject("timer-patch", line, shown, "(symbol interposition replaces functions of the harness)");
    }

    // harness-introspection
    if (c == "dl_iterate_phdr" || c == "environ" || c == "__environ" ||
        StartsWith(c, "_dl_") || c == "process_vm_readv" || c == "ptrace") {
      Reject("harness-introspection", line, shown);
    }

    // inherited-descriptor
    static const std::set<std::string_view> kFdCalls = {
        "write", "read", "dup", "dup2", "dup3", "fdopen", "fstat", "lseek", "close", "fcntl",
        "send", "writev", "pwrite", "ftruncate", "fsync", "sendfile", "ioctl"};
    if (call && kFdCalls.count(c) != 0 && i + 2 < t.size()) {
      auto fd = IntValue(t[i + 2]);
      if (fd && *fd >= 3 && *fd < 1024) {
        Reject("inherited-descriptor", line, fmt::format("{}({}, ...)", c, *fd));
      }
    }

    // precision-downcast
    static const std::set<std::string_view> kHalfTypes = {
        "__half", "__half2", "half2", "half4", "half8", "half16", "__nv_half", "__nv_bfloat16",
        "__nv_bfloat162", "nv_bfloat16", "nv_bfloat162", "__bf16", "_Float16", "bfloat16",
        "c10::Half", "c10::BFloat16", "at::Half", "at::BFloat16", "torch::kHalf",
        "torch::kFloat16", "torch::kBFloat16", "at::kHalf", "at::kBFloat16", "sycl::half",
        "cl_khr_fp16", "__hip_bfloat16", "hip_bfloat16", "rocblas_half"};
    const bool half_type_use =
        c == "half" && i + 1 < t.size() &&
        (t[i + 1].kind == TokKind::kName || t[i + 1].text == "*" || t[i + 1].text == "&" ||
         (t[i + 1].text == ")" && PrevIs(t, i, "(")) || (t[i + 1].text == ">" && PrevIs(t, i, "<")));
    if (kHalfTypes.count(c) != 0 || kHalfTypes.count(leaf) != 0 || half_type_use ||
        StartsWith(leaf, "__float2half") || StartsWith(leaf, "__float2bfloat16") ||
        StartsWith(leaf, "__half2float") || StartsWith(leaf, "__bfloat162float") ||
        StartsWith(leaf, "vload_half") || StartsWith(leaf, "vstore_half") ||
        StartsWith(leaf, "vloada_half") || StartsWith(leaf, "vstorea_half") || leaf == "__hfma" ||
        leaf == "__hmul" || leaf == "__hadd" || leaf == "__hfma2" || leaf == "__hmul2" ||
        leaf == "__hadd2") {
      Downcast(Precision::kHalf, line, shown);
    }
    if (leaf == "tf32" || c.find("float_to_tf32") != std::string::npos ||
        c.find("TF32") != std::string::npos) {
      Downcast(Precision::kTf32, line, shown);
    }
    if (StartsWith(leaf, "__nv_fp8") || leaf.find("fp8_e4m3") != std::string_view::npos ||
        leaf.find("fp8_e5m2") != std::string_view::npos) {
      Downcast(Precision::kFp8, line, shown);
    }

    // runtime-install
    static const std::set<std::string_view> kProcessCalls = {
        "system", "popen", "execv", "execve", "execvp", "execvpe", "execl", "execlp", "execle",
        "std::system", "_popen", "fexecve"};
    if (call && kProcessCalls.count(c) != 0) Reject("runtime-install", line, shown);
  }
}

// Rules on string contents: paths into /proc and inherited descriptors, package installs,
// inline PTX with low-precision types.
void Checker::CheckStrings(const std::vector<Token>& t, Lang lang) {
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind != TokKind::kString) continue;
    const std::string& s = t[i].text;
    const int line = t[i].line;
    const std::string shown = fmt::format("\"{}\"", s.size() > 40 ? s.substr(0, 40) + "..." : s);
    if (s.find("/dev/fd") != std::string::npos || s.find("/proc/self/fd") != std::string::npos) {
      Reject("inherited-descriptor", line, shown);
    } else if (s.find("/proc/self") != std::string::npos ||
               s.find("/proc/thread-self") != std::string::npos ||
               (s.find("/proc/") != std::string::npos && s.size() > 6 &&
                (IsDigit(s[s.find("/proc/") + 6]) || s[s.find("/proc/") + 6] == '{'))) {
      Reject("harness-introspection", line, shown);
    }
    for (std::string_view install : {"pip install", "pip3 install", "-m pip", "conda install",
                                     "apt-get install", "apt install", "easy_install", "uv pip"}) {
      if (s.find(install) != std::string::npos) {
        Reject("runtime-install", line, shown);
        break;
      }
    }
    if (lang == Lang::kC && (s.find("mma") != std::string::npos || s.find("cvt") != std::string::npos)) {
      if (s.find(".tf32") != std::string::npos) Downcast(Precision::kTf32, line, shown);
      if (s.find(".f16") != std::string::npos || s.find(".bf16") != std::string::npos) {
        Downcast(Precision::kHalf, line, shown);
      }
      if (s.find(".e4m3") != std::string::npos || s.find(".e5m2") != std::string::npos) {
        Downcast(Precision::kFp8, line, shown);
      }
    }
  }
}

// Numeric literals equal to one of the task's sizes used as a size: compared with (`i < 16384`,
// `x.shape[0] == 64`), given to range() or to a shape argument (torch.empty(64, 512),
// x.view(16, -1)), or assigned to a size-like name (`const int n = 16384`, `batch = 64`).
// Tile and block sizes assigned to other names, array bounds and #defines are not looked at:
// they collide with sizes such as 16 or 1024 far too often.
void Checker::CheckHardcodedShapes(const std::vector<Token>& t) {
  if (options_.task_dimensions.empty()) return;
  const std::set<std::int64_t> dims(options_.task_dimensions.begin(),
                                    options_.task_dimensions.end());
  static const std::set<std::string_view> kShapeCalls = {
      "empty", "zeros", "ones", "full", "randn", "rand", "view", "reshape", "expand",
      "new_empty", "new_zeros", "new_ones", "empty_strided", "range", "broadcast_to"};
  static const std::set<std::string_view> kCompare = {"<", "<=", ">", ">=", "==", "!="};
  auto size_like = [](std::string_view name) {
    name = LastPart(name);
    static const std::set<std::string_view> kExact = {"n", "N", "M", "K", "B", "D", "H", "W",
                                                      "C", "L", "S"};
    if (kExact.count(name) != 0) return true;
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](char ch) { return static_cast<char>(std::tolower(ch)); });
    for (std::string_view part : {"size", "dim", "batch", "numel", "rows", "cols", "features",
                                  "length", "seq"}) {
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
    const bool compared = (i > 0 && kCompare.count(t[i - 1].text) != 0 &&
                           t[i - 1].kind == TokKind::kPunct) ||
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
      Flag("hardcoded-shape", tok.line, tok.text,
           fmt::format("(the task has a size {})", *value));
    }
  }
}

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
  Checker checker(options, model, kind);
  if (kind == CandidateKind::kNative) {
    const auto tokens = MergeNames(LexC(source, 1), true);
    checker.CheckC(tokens, false);
    checker.CheckStrings(tokens, Lang::kC);
    checker.CheckHardcodedShapes(tokens);
    return checker.Report();
  }
  const auto tokens = MergeNames(LexPython(source), false);
  checker.CheckPython(tokens);
  checker.CheckStrings(tokens, Lang::kPython);
  checker.CheckHardcodedShapes(tokens);
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
    checker.CheckC(code, kind == CandidateKind::kModule);
    checker.CheckStrings(code, Lang::kC);
    checker.CheckHardcodedShapes(code);
  }
  return checker.Report();
}

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
    if ((leaf == "half" || leaf == "bfloat16") && IsCall(tokens, i) && c.find('.') != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace kforge
