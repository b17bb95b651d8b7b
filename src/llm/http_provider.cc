#include "http_provider.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "kforge/llm/pricing.h"
#include "kforge/llm/redact.h"
#include "kforge/llm/retry.h"

namespace kforge::llm {

HttpProvider::HttpProvider(HttpProviderConfig config, std::shared_ptr<HttpTransport> transport,
                           std::string provider_name)
    : config_(std::move(config)),
      transport_(std::move(transport)),
      provider_name_(std::move(provider_name)) {
  // Whoever built the config, its key is redacted wherever KForge's text goes.
  RegisterSecret(config_.api_key);
}

ProviderInfo HttpProvider::Info() const {
  return ProviderInfo{provider_name_, config_.model_id, config_.model, Redact(config_.endpoint)};
}

std::string HttpProvider::Url(std::string_view path) const {
  std::string_view base = config_.endpoint;
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  return fmt::format("{}{}", base, path);
}

Error HttpProvider::Malformed(std::string_view what, std::string_view body) const {
  std::string start(body.substr(0, 200));
  if (body.size() > 200) start += "…";
  return Error{ErrorCode::kParse,
               fmt::format("model '{}': malformed response from {}: {} (body starts: '{}')",
                           config_.model_id, Redact(config_.endpoint), what, Redact(start))};
}

Result<nlohmann::json> HttpProvider::ParseJson(std::string_view body) const {
  try {
    return nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    const bool truncated = e.byte >= body.size();
    return std::unexpected(Malformed(
        truncated ? fmt::format("the JSON body ends early after {} bytes (truncated)", body.size())
                  : fmt::format("invalid JSON at byte {}", e.byte),
        body));
  }
}

Result<Response> HttpProvider::Complete(const Request& request, const CallOptions& options) {
  if (request.HasImages() && !config_.vision) {
    return InvalidArgument(fmt::format(
        "model '{}' is not marked as accepting images (vision = false in the model registry); "
        "use a vision model or set vision = true if it is one",
        config_.model_id));
  }
  auto http = BuildHttpRequest(request, options);
  if (!http) return std::unexpected(http.error());
  http->connect_timeout = config_.connect_timeout;
  http->read_timeout = config_.read_timeout;

  const auto start = std::chrono::steady_clock::now();
  int attempts = 0;
  SendOptions send;
  send.limiter = config_.limiter.get();
  send.estimated_tokens = request.EstimatePromptTokens();
  if (config_.call_timeout.count() > 0) {
    send.call_deadline = start + config_.call_timeout;
    send.call_timeout = config_.call_timeout;
  }
  auto reply = SendWithRetry(*transport_, *http, config_.retry, options,
                             EndpointLabel{config_.model_id, config_.api_key_env}, &attempts, send);
  if (!reply) return std::unexpected(reply.error());
  const auto latency = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);

  Result<Response> response = [&]() -> Result<Response> {
    try {
      return ParseBody(request, reply->body);
    } catch (const nlohmann::json::exception& e) {
      return std::unexpected(
          Malformed(fmt::format("unexpected shape ({})", e.what()), reply->body));
    }
  }();
  if (!response) return response;
  if (config_.limiter) {
    config_.limiter->SettleTokens(send.estimated_tokens, response->usage.Total());
  }
  if (auto empty = EmptyAnswerError(*response)) return std::unexpected(std::move(*empty));
  response->latency = latency;
  response->attempts = attempts;
  response->cost_usd = CostUsd(response->usage, config_.pricing);
  // An answer that echoes the key must not carry it on: into the store, candidate files, the
  // next prompt, cassettes or reports.
  response->text = RedactRegisteredSecrets(response->text);
  response->model = RedactRegisteredSecrets(response->model);
  response->raw_body = RedactRegisteredSecrets(reply->body);
  return response;
}

std::optional<Error> HttpProvider::EmptyAnswerError(const Response& response) const {
  const bool empty = std::all_of(response.text.begin(), response.text.end(),
                                 [](unsigned char c) { return std::isspace(c) != 0; });
  if (!empty) return std::nullopt;
  // The finish reasons of the wire formats: OpenAI `length`/`content_filter`, Anthropic
  // `max_tokens`/`refusal`, Gemini `MAX_TOKENS`/`SAFETY`/`RECITATION`/... .
  const std::string& reason = response.finish_reason;
  static constexpr std::string_view kOutOfTokens[] = {"length", "max_tokens", "MAX_TOKENS"};
  static constexpr std::string_view kBlocked[] = {
      "content_filter", "refusal",  "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT",
      "SPII",           "LANGUAGE", "IMAGE_SAFETY", "OTHER"};
  if (std::ranges::find(kOutOfTokens, reason) != std::end(kOutOfTokens)) {
    return Error{ErrorCode::kInvalidArgument,
                 fmt::format("model '{}': the answer is empty: the model reached its output "
                             "limit (finish reason `{}`, {} output tokens) before writing any "
                             "text; a model that reasons first needs a larger output limit",
                             config_.model_id, reason, response.usage.output_tokens)};
  }
  if (std::ranges::find(kBlocked, reason) != std::end(kBlocked)) {
    return Error{ErrorCode::kInvalidArgument,
                 fmt::format("model '{}': the answer is empty: the provider withheld it (finish "
                             "reason `{}`: its content filter or the model's refusal)",
                             config_.model_id, reason)};
  }
  return std::nullopt;
}

std::string JoinedSystemText(const Request& request) {
  std::string out;
  for (const auto& message : request.messages) {
    if (message.role != Role::kSystem) continue;
    if (!out.empty()) out += "\n\n";
    out += message.Text();
  }
  return out;
}

}  // namespace kforge::llm
