// Provider speaking the Anthropic Messages wire format (POST {endpoint}/v1/messages).
#ifndef KFORGE_LLM_ANTHROPIC_H_
#define KFORGE_LLM_ANTHROPIC_H_

#include <memory>

#include "kforge/llm/http_provider_config.h"
#include "kforge/llm/http_transport.h"
#include "kforge/llm/provider.h"

namespace kforge::llm {

inline constexpr const char* kAnthropicEndpoint = "https://api.anthropic.com";

// An empty config.endpoint means kAnthropicEndpoint. Sends x-api-key and anthropic-version 2023-06-01; system messages go to the `system` field.
std::unique_ptr<Provider> NewAnthropicProvider(HttpProviderConfig config,
                                               std::shared_ptr<HttpTransport> transport);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_ANTHROPIC_H_
