#include "token_queries.h"

#include <charconv>
#include <set>
#include <string>
#include <system_error>

namespace kforge::guardrails {

std::string_view LastPart(std::string_view name) {
  const std::size_t dot = name.find_last_of(".:");
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}
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
bool InModule(std::string_view name, std::string_view module) {
  return name == module ||
         (name.starts_with(module) && name.size() > module.size() && name[module.size()] == '.');
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

bool IsCall(const std::vector<Token>& t, std::size_t i) {
  return i + 1 < t.size() && t[i + 1].kind == TokKind::kPunct && t[i + 1].text == "(";
}
bool NextIs(const std::vector<Token>& t, std::size_t i, std::string_view text) {
  return i + 1 < t.size() && t[i + 1].kind == TokKind::kPunct && t[i + 1].text == text;
}
bool PrevIs(const std::vector<Token>& t, std::size_t i, std::string_view text) {
  return i > 0 && t[i - 1].kind == TokKind::kPunct && t[i - 1].text == text;
}
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
  static const std::set<std::string_view> kOps = {
      "=", "+=", "-=", "*=", "/=", "//=", "%=", "&=", "|=", "^=", "@=", "**=", ">>=", "<<="};
  return t.kind == TokKind::kPunct && kOps.count(t.text) != 0;
}

}  // namespace kforge::guardrails
