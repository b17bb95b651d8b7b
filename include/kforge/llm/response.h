// What a provider returns for a successful completion.
#ifndef KFORGE_LLM_RESPONSE_H_
#define KFORGE_LLM_RESPONSE_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace kforge::llm {

// Token counts from the API's own usage fields (OpenAI `usage`, Anthropic `usage`, Gemini
// `usageMetadata`). `estimated` is true where the API reported none and KForge estimated them
// (the inbox provider, a local server that omits usage).
struct Usage {
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  bool estimated = false;

  std::int64_t Total() const { return input_tokens + output_tokens; }
};

struct Response {
  std::string text;           // the generated text (all text parts of the first choice, joined)
  std::string finish_reason;  // as the API reported it: "stop", "length", "end_turn", "STOP", ...
  std::string model;          // model name the API reported (may be more specific than requested)
  Usage usage;
  double cost_usd = 0.0;  // usage priced with the registry entry's prices; 0 where no price is known
  // Wall time of the call as the caller saw it: from the first attempt to the final answer,
  // including retries, back-off and the rate-limit waits of the attempts (HTTP providers take a
  // permit per attempt); a call-level limiter's queue (the inbox's) is not included.
  std::chrono::milliseconds latency{0};
  int attempts = 1;  // HTTP attempts made (1 = no retry)
  // Byte-exact body of the final HTTP response (the whole SSE stream when streaming; the answer
  // file for the inbox provider). Never contains an API key: bodies that echo one are redacted.
  std::string raw_body;
};

}  // namespace kforge::llm

#endif  // KFORGE_LLM_RESPONSE_H_
