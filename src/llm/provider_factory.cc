#include "kforge/llm/provider_factory.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <utility>

#include "kforge/core/files.h"
#include "kforge/core/hash.h"
#include "kforge/llm/anthropic.h"
#include "kforge/llm/gemini.h"
#include "kforge/llm/inbox.h"
#include "kforge/llm/openai.h"
#include "kforge/llm/rate_limiter.h"
#include "kforge/llm/redact.h"

namespace kforge::llm {
namespace {

std::optional<std::string> GetEnv(const ProviderFactoryOptions& options, const std::string& name) {
  if (options.get_env) return options.get_env(name);
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// The outermost layer of every provider built from the registry: whatever path an error took
// (HTTP status, stream event, transport, limiter, budget, inbox), its message leaves the llm layer
// redacted, and an answer that echoes a registered key is cleaned before anyone stores it.
class RedactingProvider : public Provider {
 public:
  explicit RedactingProvider(std::shared_ptr<Provider> inner) : inner_(std::move(inner)) {}

  Result<Response> Complete(const Request& request, const CallOptions& options) override {
    auto response = inner_->Complete(request, options);
    if (!response) {
      Error error = std::move(response).error();
      error.message = Redact(error.message);
      return std::unexpected(std::move(error));
    }
    response->text = RedactRegisteredSecrets(response->text);
    response->raw_body = RedactRegisteredSecrets(response->raw_body);
    return response;
  }

  ProviderInfo Info() const override { return inner_->Info(); }

 private:
  const std::shared_ptr<Provider> inner_;
};

}  // namespace

Result<std::string> ReadApiKey(const ModelEntry& entry, const ProviderFactoryOptions& options) {
  if (entry.api_key_env.empty()) return std::string();
  std::string key = GetEnv(options, entry.api_key_env).value_or("");
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) {
    key.pop_back();
  }
  if (key.empty()) {
    if (!entry.key_required) return std::string();
    return MakeError(ErrorCode::kPermissionDenied,
                     fmt::format("model '{}' needs an API key in ${}, which is not set; export "
                                 "{}=<your key> (or choose another model: `kforge models` lists "
                                 "them)",
                                 entry.id, entry.api_key_env, entry.api_key_env));
  }
  RegisterSecret(key);
  return key;
}

namespace {

std::filesystem::path SharedLimitsDir(const ModelEntry& entry) {
  // One folder per endpoint and wire model: what a provider's limits count.
  const std::string key = fmt::format("{}\n{}\n{}", ProviderKindName(entry.provider),
                                      entry.endpoint, entry.model);
  return KforgeCacheDir() / "limits" / ContentHash(key);
}

Result<std::shared_ptr<RateLimiter>> LimiterFor(const ModelEntry& entry) {
  if (!entry.limits.any()) return std::shared_ptr<RateLimiter>();
  if (entry.share_limits && entry.provider != ProviderKind::kInbox) {
    auto shared = RateLimiter::OpenShared(entry.limits, SharedLimitsDir(entry));
    if (shared) return shared;
    spdlog::warn("model '{}': {}; its limits hold for this process only", entry.id,
                 shared.error().message);
  }
  return std::make_shared<RateLimiter>(entry.limits);
}

}  // namespace

Result<std::shared_ptr<Provider>> NewProviderForModel(const ModelEntry& entry,
                                                      const ProviderFactoryOptions& options) {
  auto limiter = LimiterFor(entry);
  if (!limiter) return std::unexpected(limiter.error());
  std::shared_ptr<Provider> provider;
  if (entry.provider == ProviderKind::kInbox) {
    InboxOptions inbox;
    inbox.dir = entry.inbox_dir;
    inbox.model_id = entry.id;
    inbox.wait = options.inbox_wait;
    auto made = NewInboxProvider(std::move(inbox));
    if (!made) return std::unexpected(made.error());
    provider = std::move(*made);
  } else {
    auto key = ReadApiKey(entry, options);
    if (!key) return std::unexpected(key.error());
    HttpProviderConfig config;
    config.model_id = entry.id;
    config.model = entry.model;
    config.endpoint = entry.endpoint;
    config.api_key = std::move(*key);
    config.api_key_env = entry.api_key_env;
    config.vision = entry.vision;
    config.stream = entry.stream;
    config.pricing = entry.pricing;
    config.retry = entry.retry;
    config.connect_timeout = entry.connect_timeout;
    config.read_timeout = entry.read_timeout;
    config.call_timeout = entry.call_timeout;
    config.limiter = *limiter;  // every attempt on the wire takes a permit
    auto transport = options.transport ? options.transport : NewCurlTransport();
    switch (entry.provider) {
      case ProviderKind::kOpenAi:
        provider = NewOpenAiProvider(std::move(config), std::move(transport));
        break;
      case ProviderKind::kAnthropic:
        provider = NewAnthropicProvider(std::move(config), std::move(transport));
        break;
      case ProviderKind::kGemini:
        provider = NewGeminiProvider(std::move(config), std::move(transport));
        break;
      case ProviderKind::kOpenAiCompatible:
        provider = NewOpenAiCompatibleProvider(std::move(config), std::move(transport));
        break;
      case ProviderKind::kInbox:
        break;  // handled above
    }
  }
  if (entry.provider == ProviderKind::kInbox && *limiter) {
    provider = NewRateLimitedProvider(std::move(provider), *limiter);
  }
  if (options.budget) provider = NewBudgetedProvider(std::move(provider), options.budget);
  return std::shared_ptr<Provider>(std::make_shared<RedactingProvider>(std::move(provider)));
}

}  // namespace kforge::llm
