// A bounded capture of a child's output stream: the first and last halves of the limit are kept
// and the bytes cut between them are counted. Internal to src/core.
#ifndef KFORGE_SRC_CORE_BOUNDED_BUFFER_H_
#define KFORGE_SRC_CORE_BOUNDED_BUFFER_H_

#include <fmt/format.h>

#include <cstddef>
#include <string>

namespace kforge {

class BoundedBuffer {
 public:
  explicit BoundedBuffer(std::size_t limit) : limit_(limit) {}

  void Append(const char* data, std::size_t n) {
    std::size_t half = limit_ / 2;
    while (n > 0 && head_.size() < half) {
      head_.push_back(*data++);
      --n;
    }
    tail_.append(data, n);
    if (tail_.size() > 2 * half) {
      std::size_t drop = tail_.size() - half;
      cut_ += drop;
      tail_.erase(0, drop);
    }
  }

  // The text so far (head, a line saying how much was cut, tail); the buffer keeps it.
  std::string Text() const {
    if (cut_ == 0) return head_ + tail_;
    return fmt::format("{}\n[... {} bytes cut ...]\n{}", head_, cut_, tail_);
  }

  std::string Take() { return Text(); }

 private:
  std::size_t limit_;
  std::string head_;
  std::string tail_;
  std::size_t cut_ = 0;
};

}  // namespace kforge

#endif  // KFORGE_SRC_CORE_BOUNDED_BUFFER_H_
