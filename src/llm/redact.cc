#include "kforge/llm/redact.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <mutex>
#include <shared_mutex>
#include <utility>
#include <vector>

namespace kforge::llm {
namespace {

constexpr std::size_t kMinSecretLength = 8;

struct SecretStore {
  std::shared_mutex mu;
  std::vector<std::string> secrets;  // guarded by mu; longest first
};

SecretStore& Store() {
  static SecretStore* store = new SecretStore();  // never destroyed: used from any thread at exit
  return *store;
}

using Range = std::pair<std::size_t, std::size_t>;  // [begin, end)

bool IsTokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' ||
         c == '~' || c == '+' || c == '/' || c == '=';
}

bool IsKeyChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void AddRegisteredSecrets(std::string_view text, std::vector<Range>& ranges) {
  auto& store = Store();
  std::shared_lock lock(store.mu);
  for (const auto& secret : store.secrets) {
    for (std::size_t pos = text.find(secret); pos != std::string_view::npos;
         pos = text.find(secret, pos + secret.size())) {
      ranges.emplace_back(pos, pos + secret.size());
    }
  }
}

// `name` followed by optional spaces/quotes/colon: the value after it, up to a line end or quote.
void AddHeaderValues(std::string_view lower, std::string_view name, std::vector<Range>& ranges) {
  for (std::size_t pos = lower.find(name); pos != std::string_view::npos;
       pos = lower.find(name, pos + 1)) {
    std::size_t i = pos + name.size();
    // Allow `name: value`, `"name": "value"`, `name=value`.
    while (i < lower.size() && (lower[i] == '"' || lower[i] == '\'')) ++i;
    if (i >= lower.size() || (lower[i] != ':' && lower[i] != '=')) continue;
    ++i;
    while (i < lower.size() && (lower[i] == ' ' || lower[i] == '"' || lower[i] == '\'')) ++i;
    if (lower.compare(i, 7, "bearer ") == 0) i += 7;
    std::size_t end = i;
    while (end < lower.size() && IsTokenChar(lower[end])) ++end;
    if (end > i) ranges.emplace_back(i, end);
  }
}

void AddBearerTokens(std::string_view lower, std::vector<Range>& ranges) {
  constexpr std::string_view kBearer = "bearer ";
  for (std::size_t pos = lower.find(kBearer); pos != std::string_view::npos;
       pos = lower.find(kBearer, pos + 1)) {
    std::size_t i = pos + kBearer.size();
    while (i < lower.size() && lower[i] == ' ') ++i;
    std::size_t end = i;
    while (end < lower.size() && IsTokenChar(lower[end])) ++end;
    if (end > i) ranges.emplace_back(i, end);
  }
}

void AddQueryParameters(std::string_view lower, std::vector<Range>& ranges) {
  constexpr std::array<std::string_view, 6> kNames = {"key=",   "api_key=",      "apikey=",
                                                      "api-key=", "access_token=", "token="};
  for (std::string_view name : kNames) {
    for (std::size_t pos = lower.find(name); pos != std::string_view::npos;
         pos = lower.find(name, pos + 1)) {
      if (pos == 0 || (lower[pos - 1] != '?' && lower[pos - 1] != '&')) continue;
      const std::size_t begin = pos + name.size();
      std::size_t end = begin;
      while (end < lower.size() && lower[end] != '&' && lower[end] != '#' &&
             lower[end] != '"' && lower[end] != '\'' &&
             std::isspace(static_cast<unsigned char>(lower[end])) == 0) {
        ++end;
      }
      if (end > begin) ranges.emplace_back(begin, end);
    }
  }
}

// Key shapes: `prefix` at a word boundary followed by at least `min_tail` key characters.
void AddKeyShapes(std::string_view text, std::string_view prefix, std::size_t min_tail,
                  std::vector<Range>& ranges) {
  for (std::size_t pos = text.find(prefix); pos != std::string_view::npos;
       pos = text.find(prefix, pos + 1)) {
    if (pos > 0 && IsKeyChar(text[pos - 1])) continue;
    std::size_t end = pos + prefix.size();
    while (end < text.size() && IsKeyChar(text[end])) ++end;
    if (end - pos - prefix.size() >= min_tail) ranges.emplace_back(pos, end);
  }
}

std::string Apply(std::string_view text, std::vector<Range>& ranges) {
  if (ranges.empty()) return std::string(text);
  std::sort(ranges.begin(), ranges.end());
  std::string out;
  out.reserve(text.size());
  std::size_t cursor = 0;
  for (std::size_t i = 0; i < ranges.size();) {
    std::size_t begin = ranges[i].first;
    std::size_t end = ranges[i].second;
    for (++i; i < ranges.size() && ranges[i].first <= end; ++i) {
      end = std::max(end, ranges[i].second);
    }
    if (begin < cursor) begin = cursor;
    out.append(text.substr(cursor, begin - cursor));
    out.append(kRedacted);
    cursor = end;
  }
  out.append(text.substr(cursor));
  return out;
}

}  // namespace

void RegisterSecret(std::string_view secret) {
  if (secret.size() < kMinSecretLength) return;
  auto& store = Store();
  std::unique_lock lock(store.mu);
  if (std::find(store.secrets.begin(), store.secrets.end(), secret) != store.secrets.end()) return;
  store.secrets.emplace_back(secret);
  std::sort(store.secrets.begin(), store.secrets.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

std::string RedactRegisteredSecrets(std::string_view text) {
  std::vector<Range> ranges;
  AddRegisteredSecrets(text, ranges);
  return Apply(text, ranges);
}

std::string Redact(std::string_view text) {
  std::vector<Range> ranges;
  AddRegisteredSecrets(text, ranges);
  const std::string lower = Lower(text);
  AddHeaderValues(lower, "authorization", ranges);
  AddHeaderValues(lower, "x-api-key", ranges);
  AddHeaderValues(lower, "x-goog-api-key", ranges);
  AddHeaderValues(lower, "api-key", ranges);
  AddBearerTokens(lower, ranges);
  AddQueryParameters(lower, ranges);
  AddKeyShapes(text, "sk-", 16, ranges);
  AddKeyShapes(text, "AIza", 30, ranges);
  return Apply(text, ranges);
}

}  // namespace kforge::llm
