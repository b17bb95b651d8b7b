#include "kforge/llm/request.h"

#include <algorithm>

namespace kforge::llm {

bool Request::HasImages() const {
  return std::any_of(messages.begin(), messages.end(),
                     [](const Message& m) { return m.HasImages(); });
}

std::int64_t Request::EstimatePromptTokens() const {
  std::int64_t chars = 0;
  std::int64_t images = 0;
  for (const auto& message : messages) {
    for (const auto& part : message.parts) {
      if (part.IsImage()) {
        ++images;
      } else {
        chars += static_cast<std::int64_t>(part.text.size());
      }
    }
  }
  return (chars + 3) / 4 + images * 1000;
}

}  // namespace kforge::llm
