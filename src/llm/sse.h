// Incremental parser of server-sent events (text/event-stream). Internal to the llm module.
#ifndef KFORGE_SRC_LLM_SSE_H_
#define KFORGE_SRC_LLM_SSE_H_

#include <functional>
#include <string>
#include <string_view>

namespace kforge::llm {

// Feed bytes in any split; each complete event's data (its `data:` lines joined with "\n") is
// passed to the callback. Comments and other fields (event:, id:, retry:) are ignored.
class SseParser {
 public:
  explicit SseParser(std::function<void(std::string_view data)> on_event)
      : on_event_(std::move(on_event)) {}

  void Feed(std::string_view bytes);
  // Delivers a final event that was not followed by a blank line.
  void Finish();

 private:
  void Line(std::string_view line);

  std::function<void(std::string_view)> on_event_;
  std::string partial_line_;
  std::string data_;
  bool has_data_ = false;
};

}  // namespace kforge::llm

#endif  // KFORGE_SRC_LLM_SSE_H_
