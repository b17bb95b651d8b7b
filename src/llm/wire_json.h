// Small typed readers over nlohmann::json for the wire formats. Internal to the llm module.
#ifndef KFORGE_SRC_LLM_WIRE_JSON_H_
#define KFORGE_SRC_LLM_WIRE_JSON_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace kforge::llm {

// object[key] if it is an integer, else `fallback`.
inline std::int64_t JsonInt(const nlohmann::json& object, const char* key,
                            std::int64_t fallback = 0) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
}

// object[key] if it is a string, else "".
inline std::string JsonString(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace kforge::llm

#endif  // KFORGE_SRC_LLM_WIRE_JSON_H_
