#include "kforge/llm/fingerprint.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base64.h"
#include "kforge/core/hash.h"
#include "kforge/llm/redact.h"

namespace kforge::llm {
namespace {

using nlohmann::json;

constexpr std::size_t kShownChars = 60;

std::string Shorten(const std::string& text, std::size_t around) {
  const std::size_t begin = around > kShownChars / 2 ? around - kShownChars / 2 : 0;
  std::string out = begin > 0 ? "…" : "";
  out += text.substr(begin, kShownChars);
  if (begin + kShownChars < text.size()) out += "…";
  return Redact(out);
}

std::string Shown(const json& value, std::size_t around) {
  if (value.is_string()) {
    return json(Shorten(value.get<std::string>(), around)).dump();
  }
  return Shorten(value.dump(), around);
}

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// The first difference between `a` and `b` below `path`, or "" if equal.
std::string FirstDifference(const json& a, const json& b, const std::string& path) {
  if (a == b) return "";
  if (a.is_object() && b.is_object()) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : a.items()) keys.push_back(k);
    for (const auto& [k, v] : b.items()) {
      if (!a.contains(k)) keys.push_back(k);
    }
    std::sort(keys.begin(), keys.end());
    for (const auto& key : keys) {
      const std::string at = Join(path, key);
      if (!a.contains(key)) return fmt::format("{}: absent in the recording, now {}", at, Shown(b[key], 0));
      if (!b.contains(key)) return fmt::format("{}: recorded {}, now absent", at, Shown(a[key], 0));
      if (auto d = FirstDifference(a[key], b[key], at); !d.empty()) return d;
    }
    return "";
  }
  if (a.is_array() && b.is_array()) {
    const std::size_t common = std::min(a.size(), b.size());
    for (std::size_t i = 0; i < common; ++i) {
      if (auto d = FirstDifference(a[i], b[i], fmt::format("{}[{}]", path, i)); !d.empty()) {
        return d;
      }
    }
    return fmt::format("{}: recorded {} items, now {}", path, a.size(), b.size());
  }
  if (a.is_string() && b.is_string()) {
    const auto& x = a.get_ref<const std::string&>();
    const auto& y = b.get_ref<const std::string&>();
    const std::size_t at =
        static_cast<std::size_t>(std::mismatch(x.begin(), x.end(), y.begin(), y.end()).first - x.begin());
    return fmt::format("{}: differs at character {}: recorded {}, now {}", path, at, Shown(a, at),
                       Shown(b, at));
  }
  return fmt::format("{}: recorded {}, now {}", path, Shown(a, 0), Shown(b, 0));
}

}  // namespace

std::string CanonicalRequestJson(const Request& request, std::string_view model_id) {
  json j;  // nlohmann::json objects keep keys sorted, so dump() is canonical
  j["model_id"] = model_id;
  json messages = json::array();
  for (const auto& message : request.messages) {
    json content = json::array();
    for (const auto& part : message.parts) {
      if (!part.IsImage()) {
        content.push_back({{"type", "text"}, {"text", part.text}});
      } else if (!part.url.empty()) {
        content.push_back({{"type", "image"}, {"url", part.url}});
      } else {
        const auto bytes = Base64Decode(part.data_base64);
        const std::string_view data = bytes ? std::string_view(*bytes) : part.data_base64;
        content.push_back({{"type", "image"},
                           {"media_type", part.media_type},
                           {"bytes", data.size()},
                           {"xxh3", ContentHash(data)}});
      }
    }
    messages.push_back({{"role", RoleName(message.role)}, {"content", std::move(content)}});
  }
  j["messages"] = std::move(messages);
  if (request.temperature) j["temperature"] = *request.temperature;
  if (request.max_tokens) j["max_tokens"] = *request.max_tokens;
  if (!request.stop.empty()) j["stop"] = request.stop;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string RequestFingerprint(const Request& request, std::string_view model_id) {
  return ContentHash(CanonicalRequestJson(request, model_id));
}

std::string DescribeCanonicalDifference(std::string_view recorded, std::string_view now) {
  const json a = json::parse(recorded, nullptr, false);
  const json b = json::parse(now, nullptr, false);
  if (a.is_discarded() || b.is_discarded()) return "the requests differ";
  const std::string d = FirstDifference(a, b, "");
  return d.empty() ? "the requests are equal" : d;
}

}  // namespace kforge::llm
