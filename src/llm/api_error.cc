#include "api_error.h"

#include <nlohmann/json.hpp>

#include "kforge/llm/redact.h"

namespace kforge::llm {
namespace {

std::string AsText(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "";
  return j.dump();
}

}  // namespace

ApiErrorBody ParseApiError(std::string_view body) {
  ApiErrorBody out;
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    const auto error = j.find("error");
    if (error != j.end() && error->is_object()) {
      if (auto m = error->find("message"); m != error->end()) out.message = AsText(*m);
      for (const char* key : {"type", "code", "status"}) {
        if (auto t = error->find(key); t != error->end() && !t->is_null()) {
          out.type = AsText(*t);
          break;
        }
      }
    } else if (error != j.end()) {
      out.message = AsText(*error);
    } else if (auto detail = j.find("detail"); detail != j.end()) {
      out.message = AsText(*detail);
    } else if (auto message = j.find("message"); message != j.end()) {
      out.message = AsText(*message);
    }
  }
  if (out.message.empty() && out.type.empty()) {
    out.message = std::string(body.substr(0, 300));
    if (body.size() > 300) out.message += "…";
  }
  out.type = Redact(out.type);
  out.message = Redact(out.message);
  return out;
}

std::optional<std::string> RetryInfoDelay(std::string_view body) {
  if (body.find("RetryInfo") == std::string_view::npos) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  const auto error = j.find("error");
  if (error == j.end() || !error->is_object()) return std::nullopt;
  const auto details = error->find("details");
  if (details == error->end() || !details->is_array()) return std::nullopt;
  for (const auto& detail : *details) {
    if (!detail.is_object()) continue;
    const auto type = detail.find("@type");
    const auto delay = detail.find("retryDelay");
    if (type != detail.end() && type->is_string() &&
        type->get<std::string>().ends_with("google.rpc.RetryInfo") && delay != detail.end() &&
        delay->is_string()) {
      return delay->get<std::string>();
    }
  }
  return std::nullopt;
}

}  // namespace kforge::llm
