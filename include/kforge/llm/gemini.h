// Provider speaking the Google Gemini generateContent wire format
// (POST {endpoint}/models/{model}:generateContent).
#ifndef KFORGE_LLM_GEMINI_H_
#define KFORGE_LLM_GEMINI_H_

#include <memory>

#include "kforge/llm/http_provider_config.h"
#include "kforge/llm/http_transport.h"
#include "kforge/llm/provider.h"

namespace kforge::llm {

inline constexpr const char* kGeminiEndpoint = "https://generativelanguage.googleapis.com/v1beta";

// An empty config.endpoint means kGeminiEndpoint. The key travels in the x-goog-api-key header, never in the URL; system messages go to
// systemInstruction; images must be inline data (Gemini does not fetch arbitrary URLs).
std::unique_ptr<Provider> NewGeminiProvider(HttpProviderConfig config,
                                            std::shared_ptr<HttpTransport> transport);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_GEMINI_H_
