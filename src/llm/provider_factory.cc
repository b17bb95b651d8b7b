#include "kforge/llm/provider_factory.h"

#include <fmt/format.h>

#include <cstdlib>
#include <utility>

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

Result<std::shared_ptr<Provider>> NewProviderForModel(const ModelEntry& entry,
                                                      const ProviderFactoryOptions& options) {
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
  const RateLimits& limits = entry.limits;
  if (limits.max_concurrency > 0 || limits.requests_per_minute > 0 ||
      limits.tokens_per_minute > 0) {
    provider = NewRateLimitedProvider(std::move(provider), std::make_shared<RateLimiter>(limits));
  }
  if (options.budget) provider = NewBudgetedProvider(std::move(provider), options.budget);
  return provider;
}

}  // namespace kforge::llm
