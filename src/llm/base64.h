// Base64 (standard alphabet, padded) for inline images. Internal to the llm module.
#ifndef KFORGE_SRC_LLM_BASE64_H_
#define KFORGE_SRC_LLM_BASE64_H_

#include <optional>
#include <string>
#include <string_view>

namespace kforge::llm {

std::string Base64Encode(std::string_view bytes);
// nullopt on a character outside the alphabet or bad padding; whitespace is skipped.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace kforge::llm

#endif  // KFORGE_SRC_LLM_BASE64_H_
