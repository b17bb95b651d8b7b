#include "kforge/llm/openai.h"

#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "http_provider.h"
#include "kforge/llm/redact.h"
#include "sse.h"
#include "wire_json.h"

namespace kforge::llm {
namespace {

using nlohmann::json;

json ContentJson(const Message& message) {
  if (!message.HasImages() && message.parts.size() == 1) return message.parts[0].text;
  json parts = json::array();
  for (const auto& part : message.parts) {
    if (!part.IsImage()) {
      parts.push_back({{"type", "text"}, {"text", part.text}});
      continue;
    }
    const std::string url = part.url.empty()
                                ? fmt::format("data:{};base64,{}", part.media_type,
                                              part.data_base64)
                                : part.url;
    parts.push_back({{"type", "image_url"}, {"image_url", {{"url", url}}}});
  }
  return parts;
}

// Message content may be a string, null (refusals, tool calls) or an array of text parts.
std::string ContentText(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array()) {
    for (const auto& part : content) out += JsonString(part, "text");
  }
  return out;
}

void FillUsage(const json& usage, Response& response) {
  response.usage.input_tokens = JsonInt(usage, "prompt_tokens", 0);
  response.usage.output_tokens = JsonInt(usage, "completion_tokens", 0);
  response.usage.estimated = false;
}

void EstimateUsageIfMissing(bool had_usage, std::int64_t prompt_estimate, Response& response) {
  if (had_usage) return;
  response.usage.input_tokens = prompt_estimate;
  response.usage.output_tokens = static_cast<std::int64_t>(response.text.size() + 3) / 4;
  response.usage.estimated = true;
}

class OpenAiChatProvider : public HttpProvider {
 public:
  OpenAiChatProvider(HttpProviderConfig config, std::shared_ptr<HttpTransport> transport,
                     bool compatible)
      : HttpProvider(std::move(config), std::move(transport),
                     compatible ? "openai_compatible" : "openai"),
        compatible_(compatible) {}

 protected:
  Result<HttpRequest> BuildHttpRequest(const Request& request,
                                       const CallOptions& options) const override {
    json body;
    body["model"] = config().model;
    json messages = json::array();
    for (const auto& message : request.messages) {
      messages.push_back({{"role", RoleName(message.role)}, {"content", ContentJson(message)}});
    }
    body["messages"] = std::move(messages);
    if (request.temperature) body["temperature"] = *request.temperature;
    if (request.max_tokens) {
      body[compatible_ ? "max_tokens" : "max_completion_tokens"] = *request.max_tokens;
    }
    if (!request.stop.empty()) body["stop"] = request.stop;
    const bool stream = streaming();
    if (stream) {
      body["stream"] = true;
      body["stream_options"] = {{"include_usage", true}};
    }
    HttpRequest http;
    http.url = Url("/chat/completions");
    http.headers.emplace_back("Content-Type", "application/json");
    if (!config().api_key.empty()) {
      http.headers.emplace_back("Authorization", "Bearer " + config().api_key);
    }
    http.body = body.dump();
    if (stream) {
      // An event with data is progress; keep-alive comments (": ping") are not.
      http.counts_as_progress = [](std::string_view chunk) {
        return chunk.find("data:") != std::string_view::npos;
      };
    }
    if (stream && options.on_text) {
      // Progress display only: text of an attempt that is later retried is shown as well.
      auto parser = std::make_shared<SseParser>([on_text = options.on_text](std::string_view data) {
        if (data == "[DONE]") return;
        const json chunk = json::parse(data, nullptr, /*allow_exceptions=*/false);
        if (!chunk.is_object()) return;
        const auto choices = chunk.find("choices");
        if (choices == chunk.end() || !choices->is_array() || choices->empty()) return;
        const json& delta = (*choices)[0].value("delta", json::object());
        const std::string text = RedactRegisteredSecrets(JsonString(delta, "content"));
        if (!text.empty()) on_text(text);
      });
      http.on_body = [parser](std::string_view bytes) { parser->Feed(bytes); };
    }
    return http;
  }

  Result<Response> ParseBody(const Request& request, std::string_view body) const override {
    const std::int64_t prompt_estimate = request.EstimatePromptTokens();
    return streaming() ? ParseStream(body, prompt_estimate) : ParseSingle(body, prompt_estimate);
  }

 private:
  bool streaming() const { return compatible_ && config().stream; }

  Result<Response> ParseSingle(std::string_view body, std::int64_t prompt_estimate) const {
    auto parsed = ParseJson(body);
    if (!parsed) return std::unexpected(parsed.error());
    const json& j = *parsed;
    const auto choices = j.find("choices");
    if (!j.is_object() || choices == j.end() || !choices->is_array() || choices->empty()) {
      return std::unexpected(Malformed("no choices[0] in the response", body));
    }
    const json& choice = (*choices)[0];
    if (!choice.contains("message")) {
      return std::unexpected(Malformed("choices[0] has no message", body));
    }
    Response response;
    response.text = ContentText(choice.at("message").value("content", json()));
    response.finish_reason = JsonString(choice, "finish_reason");
    if (const std::string refusal = JsonString(choice.at("message"), "refusal");
        response.text.empty() && !refusal.empty()) {
      return InvalidArgument(fmt::format("model '{}': the answer is empty: the model refused ({})",
                                         config().model_id, Redact(refusal)));
    }
    response.model = JsonString(j, "model");
    const auto usage = j.find("usage");
    const bool had_usage = usage != j.end() && usage->is_object();
    if (had_usage) FillUsage(*usage, response);
    EstimateUsageIfMissing(had_usage, prompt_estimate, response);
    return response;
  }

  Result<Response> ParseStream(std::string_view body, std::int64_t prompt_estimate) const {
    Response response;
    bool done = false;
    bool had_usage = false;
    std::optional<Error> failure;
    SseParser parser([&](std::string_view data) {
      if (failure || done) return;
      if (data == "[DONE]") {
        done = true;
        return;
      }
      const json chunk = json::parse(data, nullptr, /*allow_exceptions=*/false);
      if (!chunk.is_object()) {
        failure = Malformed("an event of the stream is not a JSON object", data);
        return;
      }
      if (auto error = chunk.find("error"); error != chunk.end()) {
        // The event is the server's text: it may quote the key (redacted like every error).
        failure = Error{ErrorCode::kUnavailable,
                        fmt::format("model '{}': the server reported an error mid-stream: {}",
                                    config().model_id, Redact(error->dump()))};
        return;
      }
      if (response.model.empty()) response.model = JsonString(chunk, "model");
      if (auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
        FillUsage(*usage, response);
        had_usage = true;
      }
      const auto choices = chunk.find("choices");
      if (choices == chunk.end() || !choices->is_array() || choices->empty()) return;
      const json& choice = (*choices)[0];
      if (auto delta = choice.find("delta"); delta != choice.end()) {
        response.text += JsonString(*delta, "content");
      }
      if (auto reason = JsonString(choice, "finish_reason"); !reason.empty()) {
        response.finish_reason = reason;
      }
    });
    parser.Feed(body);
    parser.Finish();
    if (failure) return std::unexpected(std::move(*failure));
    if (!done) {
      return std::unexpected(
          Malformed("the event stream ended without `data: [DONE]` (truncated)", body));
    }
    EstimateUsageIfMissing(had_usage, prompt_estimate, response);
    return response;
  }

  const bool compatible_;
};

}  // namespace

std::unique_ptr<Provider> NewOpenAiProvider(HttpProviderConfig config,
                                            std::shared_ptr<HttpTransport> transport) {
  if (config.endpoint.empty()) config.endpoint = kOpenAiEndpoint;
  return std::make_unique<OpenAiChatProvider>(std::move(config), std::move(transport), false);
}

std::unique_ptr<Provider> NewOpenAiCompatibleProvider(HttpProviderConfig config,
                                                      std::shared_ptr<HttpTransport> transport) {
  return std::make_unique<OpenAiChatProvider>(std::move(config), std::move(transport), true);
}

}  // namespace kforge::llm
