#include "sse.h"

namespace kforge::llm {

void SseParser::Feed(std::string_view bytes) {
  while (!bytes.empty()) {
    const std::size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      partial_line_.append(bytes);
      return;
    }
    std::string_view line = bytes.substr(0, nl);
    bytes.remove_prefix(nl + 1);
    if (!partial_line_.empty()) {
      partial_line_.append(line);
      std::string whole = std::move(partial_line_);
      partial_line_.clear();
      Line(whole);
    } else {
      Line(line);
    }
  }
}

void SseParser::Line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) {
    if (has_data_) on_event_(data_);
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // comment
  const std::size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  if (field != "data") return;
  std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (has_data_) data_ += '\n';
  data_.append(value);
  has_data_ = true;
}

void SseParser::Finish() {
  if (!partial_line_.empty()) {
    std::string whole = std::move(partial_line_);
    partial_line_.clear();
    Line(whole);
  }
  if (has_data_) on_event_(data_);
  data_.clear();
  has_data_ = false;
}

}  // namespace kforge::llm
