// One completion request, independent of the provider that answers it.
#ifndef KFORGE_LLM_REQUEST_H_
#define KFORGE_LLM_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kforge/llm/message.h"

namespace kforge::llm {

struct Request {
  // The conversation. System messages may appear anywhere; providers whose API has a separate
  // system field (Anthropic, Gemini) join all system texts with a blank line, in order.
  std::vector<Message> messages;
  // Sampling temperature; unset = the provider's default.
  std::optional<double> temperature;
  // Upper bound on generated tokens; unset = 4096 where the API requires a value (Anthropic),
  // else the provider's default.
  std::optional<int> max_tokens;
  // Stop sequences; empty = none.
  std::vector<std::string> stop;

  bool HasImages() const;
  // Rough size of the prompt in tokens (characters / 4, images counted as 1000 tokens each): used
  // by the token rate limiter before the real count is known, and by the inbox provider.
  std::int64_t EstimatePromptTokens() const;
};

}  // namespace kforge::llm

#endif  // KFORGE_LLM_REQUEST_H_
