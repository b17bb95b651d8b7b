// Providers speaking the OpenAI Chat Completions wire format (POST {endpoint}/chat/completions).
#ifndef KFORGE_LLM_OPENAI_H_
#define KFORGE_LLM_OPENAI_H_

#include <memory>

#include "kforge/llm/http_provider_config.h"
#include "kforge/llm/http_transport.h"
#include "kforge/llm/provider.h"

namespace kforge::llm {

inline constexpr const char* kOpenAiEndpoint = "https://api.openai.com/v1";

// api.openai.com (or a gateway URL with the same format): Bearer key, max_completion_tokens.
// An empty config.endpoint means kOpenAiEndpoint.
std::unique_ptr<Provider> NewOpenAiProvider(HttpProviderConfig config,
                                            std::shared_ptr<HttpTransport> transport);

// vLLM, SGLang, Ollama, llama.cpp server, LM Studio and gateways: the same format with an optional
// key, `max_tokens`, and server-sent events when config.stream is set (the stream must end with
// `data: [DONE]`; one that stops early is reported as truncated).
std::unique_ptr<Provider> NewOpenAiCompatibleProvider(HttpProviderConfig config,
                                                      std::shared_ptr<HttpTransport> transport);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_OPENAI_H_
