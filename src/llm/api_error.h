// Extracts the human-readable error from an API error body. Internal to the llm module.
#ifndef KFORGE_SRC_LLM_API_ERROR_H_
#define KFORGE_SRC_LLM_API_ERROR_H_

#include <optional>
#include <string>
#include <string_view>

namespace kforge::llm {

struct ApiErrorBody {
  std::string type;     // OpenAI error.type/code, Anthropic error.type, Gemini error.status
  std::string message;  // error.message, or the start of a non-JSON body
};

// Understands {"error": {"message", "type"|"code"|"status"}} (OpenAI, Gemini, most servers),
// {"type":"error","error":{...}} (Anthropic), {"error": "text"} and {"detail": ...} (vLLM,
// FastAPI). Other bodies give their first 300 bytes. The result is redacted.
ApiErrorBody ParseApiError(std::string_view body);

// Gemini (google.rpc): the `retryDelay` of a `google.rpc.RetryInfo` entry of error.details,
// e.g. "25s"; nullopt when the body has none.
std::optional<std::string> RetryInfoDelay(std::string_view body);

}  // namespace kforge::llm

#endif  // KFORGE_SRC_LLM_API_ERROR_H_
