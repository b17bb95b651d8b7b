#include "lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <set>
#include <utility>

namespace kforge::guardrails {
namespace {

bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }

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
    } else if ((c == '+' || c == '-') &&
               (s[j - 1] == 'e' || s[j - 1] == 'E' || s[j - 1] == 'p' || s[j - 1] == 'P')) {
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

}  // namespace

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::vector<Token> LexPython(std::string_view s) {
  std::vector<Token> out;
  int line = 1;
  int depth = 0;
  int col = 0;  // indentation measured on the current physical line so far
  bool line_has_token = false;
  bool new_logical = true;  // the next token starts a logical line
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

std::vector<Token> LexC(std::string_view s, int first_line) {
  std::vector<Token> out;
  int line = first_line;
  int depth = 0;
  std::size_t i = 0;
  auto emit = [&](TokKind kind, std::string text, int at_line, std::size_t offset = 0) {
    out.push_back(
        {.kind = kind, .text = std::move(text), .line = at_line, .depth = depth, .offset = offset});
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
      const bool global = t.text == "::" && (out.empty() || out.back().kind != TokKind::kName);
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

}  // namespace kforge::guardrails
