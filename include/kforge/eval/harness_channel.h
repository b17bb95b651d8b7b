// The channel between the judge and a harness (runner/HARNESS.md, "Transport"): a SOCK_SEQPACKET
// Unix socket pair; the child's end becomes its fd 3. One message is one UTF-8 JSON object of at
// most kMaxHarnessMessage bytes; message boundaries are the socket's, so a reply can be neither
// split nor joined with another.
//
// Thread-safety: one owner.
#ifndef KFORGE_EVAL_HARNESS_CHANNEL_H_
#define KFORGE_EVAL_HARNESS_CHANNEL_H_

#include <chrono>
#include <string>
#include <string_view>

#include "kforge/core/error.h"

namespace kforge {

inline constexpr std::size_t kMaxHarnessMessage = 64 * 1024;

class HarnessChannel {
 public:
  using Clock = std::chrono::steady_clock;

  // A fresh socket pair (both ends close-on-exec: the child's end is passed explicitly through
  // ProcessSpec::inherit_fds).
  static Result<HarnessChannel> Create();
  HarnessChannel(HarnessChannel&& other) noexcept;
  HarnessChannel& operator=(HarnessChannel&& other) noexcept;
  HarnessChannel(const HarnessChannel&) = delete;
  HarnessChannel& operator=(const HarnessChannel&) = delete;
  ~HarnessChannel();

  int child_fd() const { return child_; }
  // Closes this process's copy of the child's end, once the child holds it: the parent then sees
  // end of file when the child (and everything it started) has gone.
  void CloseChildEnd();

  // One message; an error when it is too long or the peer is gone.
  Status Send(std::string_view message);

  // The next message, waiting until `deadline`. `watch_fd` (a pidfd, or -1) readable means the
  // child has exited. Errors: kTimeout at the deadline; kUnavailable when the peer closed its end
  // or exited; kParse for a message longer than kMaxHarnessMessage (cut by the socket).
  Result<std::string> Receive(Clock::time_point deadline, int watch_fd = -1);

 private:
  HarnessChannel(int parent, int child) : parent_(parent), child_(child) {}

  int parent_ = -1;
  int child_ = -1;
};

}  // namespace kforge

#endif  // KFORGE_EVAL_HARNESS_CHANNEL_H_
