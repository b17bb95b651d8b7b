// Chat messages: a role and an ordered list of text and image parts.
//
// Plain values with no behaviour beyond construction helpers; providers translate them into each
// API's wire format. Images carry either inline base64 data with a media type or a URL (not every
// provider accepts URLs; those that do not say so in the error).
#ifndef KFORGE_LLM_MESSAGE_H_
#define KFORGE_LLM_MESSAGE_H_

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.h"

namespace kforge::llm {

enum class Role { kSystem, kUser, kAssistant };

// "system", "user" or "assistant".
std::string_view RoleName(Role role);

struct ContentPart {
  enum class Kind { kText, kImage };

  Kind kind = Kind::kText;
  std::string text;         // kText: the text
  std::string media_type;   // kImage with data: "image/png", "image/jpeg", "image/webp", "image/gif"
  std::string data_base64;  // kImage: inline image bytes, base64 (standard alphabet, padded)
  std::string url;          // kImage: a URL instead of inline data (then data_base64 is empty)

  static ContentPart Text(std::string text);
  static ContentPart ImageBase64(std::string media_type, std::string data_base64);
  static ContentPart ImageUrl(std::string url);
  // Reads an image file and infers the media type from its extension (.png, .jpg/.jpeg, .webp, .gif).
  static Result<ContentPart> ImageFile(const std::filesystem::path& path);

  bool IsImage() const { return kind == Kind::kImage; }
};

struct Message {
  Role role = Role::kUser;
  std::vector<ContentPart> parts;

  static Message System(std::string text);
  static Message User(std::string text);
  static Message Assistant(std::string text);

  // The text parts joined with "\n" (images are skipped).
  std::string Text() const;
  bool HasImages() const;
};

}  // namespace kforge::llm

#endif  // KFORGE_LLM_MESSAGE_H_
