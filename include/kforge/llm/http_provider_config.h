// Configuration shared by the HTTP providers (OpenAI, OpenAI-compatible, Anthropic, Gemini).
#ifndef KFORGE_LLM_HTTP_PROVIDER_CONFIG_H_
#define KFORGE_LLM_HTTP_PROVIDER_CONFIG_H_

#include <chrono>
#include <memory>
#include <string>

#include "kforge/llm/pricing.h"
#include "kforge/llm/rate_limiter.h"
#include "kforge/llm/retry.h"

namespace kforge::llm {

struct HttpProviderConfig {
  std::string model_id;  // registry id, used in messages and cassettes
  std::string model;     // model name sent on the wire
  // Base URL, e.g. "https://api.openai.com/v1", "https://api.anthropic.com",
  // "https://generativelanguage.googleapis.com/v1beta", "http://localhost:8000/v1".
  std::string endpoint;
  std::string api_key;      // the key itself; "" sends no key (local servers)
  std::string api_key_env;  // the variable it came from, named in messages; never the value
  bool vision = false;      // the model accepts images; requests with images fail early if not
  // OpenAI-compatible only: ask for a server-sent-event stream, so that long generations are not
  // cut by the read timeout and CallOptions::on_text sees text as it is generated.
  bool stream = false;
  Pricing pricing;
  RetryPolicy retry;
  std::chrono::milliseconds connect_timeout{10'000};
  // Idle timeout of one attempt: the longest time without progress (HttpRequest::read_timeout).
  std::chrono::milliseconds read_timeout{300'000};
  // The whole call, every attempt and wait included; past it the call fails with kTimeout.
  // 0 = no bound of the model's own (CallOptions::deadline still applies).
  std::chrono::milliseconds call_timeout{900'000};
  // The model's limits: every attempt on the wire takes a permit (null: none).
  std::shared_ptr<RateLimiter> limiter;
};

}  // namespace kforge::llm

#endif  // KFORGE_LLM_HTTP_PROVIDER_CONFIG_H_
