#include "kforge/llm/gemini.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "http_provider.h"
#include "wire_json.h"

namespace kforge::llm {
namespace {

using nlohmann::json;

class GeminiProvider : public HttpProvider {
 public:
  using HttpProvider::HttpProvider;

 protected:
  Result<HttpRequest> BuildHttpRequest(const Request& request,
                                       const CallOptions& /*options*/) const override {
    json body;
    json contents = json::array();
    for (const auto& message : request.messages) {
      if (message.role == Role::kSystem) continue;
      json parts = json::array();
      for (const auto& part : message.parts) {
        if (!part.IsImage()) {
          parts.push_back({{"text", part.text}});
          continue;
        }
        if (!part.url.empty()) {
          return InvalidArgument(fmt::format(
              "model '{}': Gemini takes images as inline data, not URLs; load the image with "
              "ContentPart::ImageFile",
              config().model_id));
        }
        parts.push_back(
            {{"inlineData", {{"mimeType", part.media_type}, {"data", part.data_base64}}}});
      }
      contents.push_back(
          {{"role", message.role == Role::kAssistant ? "model" : "user"}, {"parts", parts}});
    }
    body["contents"] = std::move(contents);
    if (const std::string system = JoinedSystemText(request); !system.empty()) {
      body["systemInstruction"] = {{"parts", json::array({{{"text", system}}})}};
    }
    json generation = json::object();
    if (request.temperature) generation["temperature"] = *request.temperature;
    if (request.max_tokens) generation["maxOutputTokens"] = *request.max_tokens;
    if (!request.stop.empty()) generation["stopSequences"] = request.stop;
    if (!generation.empty()) body["generationConfig"] = std::move(generation);

    HttpRequest http;
    http.url = Url(fmt::format("/models/{}:generateContent", config().model));
    http.headers.emplace_back("Content-Type", "application/json");
    if (!config().api_key.empty()) http.headers.emplace_back("x-goog-api-key", config().api_key);
    http.body = body.dump();
    return http;
  }

  Result<Response> ParseBody(const Request& /*request*/, std::string_view body) const override {
    auto parsed = ParseJson(body);
    if (!parsed) return std::unexpected(parsed.error());
    const json& j = *parsed;
    if (!j.is_object()) return std::unexpected(Malformed("the body is not a JSON object", body));
    const auto candidates = j.find("candidates");
    if (candidates == j.end() || !candidates->is_array() || candidates->empty()) {
      const auto feedback = j.find("promptFeedback");
      if (feedback != j.end()) {
        return InvalidArgument(fmt::format("model '{}': Gemini refused the prompt (blockReason {})",
                                           config().model_id,
                                           JsonString(*feedback, "blockReason")));
      }
      return std::unexpected(Malformed("no candidates[0] in the response", body));
    }
    const json& candidate = (*candidates)[0];
    Response response;
    if (auto content = candidate.find("content"); content != candidate.end()) {
      if (auto parts = content->find("parts"); parts != content->end() && parts->is_array()) {
        for (const auto& part : *parts) {
          if (part.value("thought", false)) continue;  // thinking summaries are not the answer
          response.text += JsonString(part, "text");
        }
      }
    }
    response.finish_reason = JsonString(candidate, "finishReason");
    response.model = JsonString(j, "modelVersion");
    const auto usage = j.find("usageMetadata");
    if (usage == j.end() || !usage->is_object()) {
      return std::unexpected(Malformed("no `usageMetadata` in the response", body));
    }
    response.usage.input_tokens = JsonInt(*usage, "promptTokenCount");
    // Thinking tokens are billed as output.
    response.usage.output_tokens =
        JsonInt(*usage, "candidatesTokenCount") + JsonInt(*usage, "thoughtsTokenCount");
    return response;
  }
};

}  // namespace

std::unique_ptr<Provider> NewGeminiProvider(HttpProviderConfig config,
                                            std::shared_ptr<HttpTransport> transport) {
  if (config.endpoint.empty()) {
    config.endpoint = kGeminiEndpoint;
  }
  return std::make_unique<GeminiProvider>(std::move(config), std::move(transport), "gemini");
}

}  // namespace kforge::llm
