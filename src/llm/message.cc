#include "kforge/llm/message.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "base64.h"
#include "kforge/core/files.h"

namespace kforge::llm {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kSystem: return "system";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
  }
  return "user";
}

ContentPart ContentPart::Text(std::string text) {
  ContentPart part;
  part.kind = Kind::kText;
  part.text = std::move(text);
  return part;
}

ContentPart ContentPart::ImageBase64(std::string media_type, std::string data_base64) {
  ContentPart part;
  part.kind = Kind::kImage;
  part.media_type = std::move(media_type);
  part.data_base64 = std::move(data_base64);
  return part;
}

ContentPart ContentPart::ImageUrl(std::string url) {
  ContentPart part;
  part.kind = Kind::kImage;
  part.url = std::move(url);
  return part;
}

Result<ContentPart> ContentPart::ImageFile(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string media_type;
  if (ext == ".png") {
    media_type = "image/png";
  } else if (ext == ".jpg" || ext == ".jpeg") {
    media_type = "image/jpeg";
  } else if (ext == ".webp") {
    media_type = "image/webp";
  } else if (ext == ".gif") {
    media_type = "image/gif";
  } else {
    return InvalidArgument(fmt::format(
        "image {}: unsupported extension '{}'; use .png, .jpg, .jpeg, .webp or .gif",
        path.string(), ext));
  }
  auto bytes = ReadFile(path);
  if (!bytes) return std::unexpected(bytes.error());
  return ImageBase64(std::move(media_type), Base64Encode(*bytes));
}

namespace {
Message TextMessage(Role role, std::string text) {
  Message m;
  m.role = role;
  m.parts.push_back(ContentPart::Text(std::move(text)));
  return m;
}
}  // namespace

Message Message::System(std::string text) { return TextMessage(Role::kSystem, std::move(text)); }
Message Message::User(std::string text) { return TextMessage(Role::kUser, std::move(text)); }
Message Message::Assistant(std::string text) {
  return TextMessage(Role::kAssistant, std::move(text));
}

std::string Message::Text() const {
  std::string out;
  bool first = true;
  for (const auto& part : parts) {
    if (part.IsImage()) continue;
    if (!first) out += '\n';
    out += part.text;
    first = false;
  }
  return out;
}

bool Message::HasImages() const {
  return std::any_of(parts.begin(), parts.end(), [](const ContentPart& p) { return p.IsImage(); });
}

}  // namespace kforge::llm
