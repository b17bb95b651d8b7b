#include "kforge/llm/anthropic.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "http_provider.h"
#include "wire_json.h"

namespace kforge::llm {
namespace {

using nlohmann::json;

constexpr int kDefaultMaxTokens = 4096;  // the Messages API requires max_tokens

json ContentJson(const Message& message) {
  json parts = json::array();
  for (const auto& part : message.parts) {
    if (!part.IsImage()) {
      parts.push_back({{"type", "text"}, {"text", part.text}});
    } else if (part.url.empty()) {
      parts.push_back({{"type", "image"},
                       {"source",
                        {{"type", "base64"},
                         {"media_type", part.media_type},
                         {"data", part.data_base64}}}});
    } else {
      parts.push_back({{"type", "image"}, {"source", {{"type", "url"}, {"url", part.url}}}});
    }
  }
  return parts;
}

class AnthropicProvider : public HttpProvider {
 public:
  using HttpProvider::HttpProvider;

 protected:
  Result<HttpRequest> BuildHttpRequest(const Request& request,
                                       const CallOptions& /*options*/) const override {
    json body;
    body["model"] = config().model;
    body["max_tokens"] = request.max_tokens.value_or(kDefaultMaxTokens);
    if (const std::string system = JoinedSystemText(request); !system.empty()) {
      body["system"] = system;
    }
    json messages = json::array();
    for (const auto& message : request.messages) {
      if (message.role == Role::kSystem) continue;
      messages.push_back({{"role", RoleName(message.role)}, {"content", ContentJson(message)}});
    }
    body["messages"] = std::move(messages);
    if (request.temperature) body["temperature"] = *request.temperature;
    if (!request.stop.empty()) body["stop_sequences"] = request.stop;

    HttpRequest http;
    http.url = Url("/v1/messages");
    http.headers.emplace_back("Content-Type", "application/json");
    http.headers.emplace_back("anthropic-version", "2023-06-01");
    if (!config().api_key.empty()) http.headers.emplace_back("x-api-key", config().api_key);
    http.body = body.dump();
    return http;
  }

  Result<Response> ParseBody(const Request& /*request*/, std::string_view body) const override {
    auto parsed = ParseJson(body);
    if (!parsed) return std::unexpected(parsed.error());
    const json& j = *parsed;
    if (!j.is_object()) return std::unexpected(Malformed("the body is not a JSON object", body));
    const auto content = j.find("content");
    if (content == j.end() || !content->is_array()) {
      return std::unexpected(Malformed("no `content` array in the response", body));
    }
    Response response;
    for (const auto& block : *content) {
      if (JsonString(block, "type") == "text") response.text += JsonString(block, "text");
    }
    response.finish_reason = JsonString(j, "stop_reason");
    response.model = JsonString(j, "model");
    const auto usage = j.find("usage");
    if (usage == j.end() || !usage->is_object()) {
      return std::unexpected(Malformed("no `usage` in the response", body));
    }
    // Cached prompt tokens are reported separately from input_tokens; all of them are input.
    response.usage.input_tokens = JsonInt(*usage, "input_tokens") +
                                  JsonInt(*usage, "cache_creation_input_tokens") +
                                  JsonInt(*usage, "cache_read_input_tokens");
    response.usage.output_tokens = JsonInt(*usage, "output_tokens");
    return response;
  }
};

}  // namespace

std::unique_ptr<Provider> NewAnthropicProvider(HttpProviderConfig config,
                                               std::shared_ptr<HttpTransport> transport) {
  if (config.endpoint.empty()) config.endpoint = kAnthropicEndpoint;
  return std::make_unique<AnthropicProvider>(std::move(config), std::move(transport),
                                             "anthropic");
}

}  // namespace kforge::llm
