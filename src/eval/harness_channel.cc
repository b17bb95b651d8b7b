#include "kforge/eval/harness_channel.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace kforge {

Result<HarnessChannel> HarnessChannel::Create() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return IoError(fmt::format("socketpair failed: {}", std::strerror(errno)));
  }
  return HarnessChannel(fds[0], fds[1]);
}

HarnessChannel::HarnessChannel(HarnessChannel&& other) noexcept
    : parent_(other.parent_), child_(other.child_) {
  other.parent_ = other.child_ = -1;
}

HarnessChannel& HarnessChannel::operator=(HarnessChannel&& other) noexcept {
  if (this != &other) {
    this->~HarnessChannel();
    parent_ = other.parent_;
    child_ = other.child_;
    other.parent_ = other.child_ = -1;
  }
  return *this;
}

HarnessChannel::~HarnessChannel() {
  if (parent_ >= 0) ::close(parent_);
  CloseChildEnd();
}

void HarnessChannel::CloseChildEnd() {
  if (child_ >= 0) ::close(child_);
  child_ = -1;
}

Status HarnessChannel::Send(std::string_view message) {
  if (message.size() > kMaxHarnessMessage) {
    return InvalidArgument(fmt::format("a harness command of {} bytes is over the {} byte limit",
                                       message.size(), kMaxHarnessMessage));
  }
  const ssize_t n = ::send(parent_, message.data(), message.size(), MSG_NOSIGNAL);
  if (n != static_cast<ssize_t>(message.size())) {
    return Unavailable(fmt::format("the harness channel is closed ({})",
                                   n < 0 ? std::strerror(errno) : "short send"));
  }
  return Ok();
}

Result<std::string> HarnessChannel::Receive(Clock::time_point deadline, int watch_fd) {
  bool child_exited = false;
  while (true) {
    const auto now = Clock::now();
    if (now >= deadline) return TimeoutError("the harness did not reply in time");
    const auto wait_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    pollfd fds[2] = {{parent_, POLLIN, 0}, {child_exited ? -1 : watch_fd, POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<long long>(wait_ms, 1000)));
    if (ready < 0 && errno != EINTR) {
      return IoError(fmt::format("poll on the harness channel: {}", std::strerror(errno)));
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      std::vector<char> buffer(kMaxHarnessMessage + 1);
      const ssize_t n = ::recv(parent_, buffer.data(), buffer.size(), MSG_DONTWAIT | MSG_TRUNC);
      if (n == 0) return Unavailable("the harness closed its channel");
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        return Unavailable(fmt::format("the harness channel failed: {}", std::strerror(errno)));
      }
      if (static_cast<std::size_t>(n) > kMaxHarnessMessage) {
        return ParseError(fmt::format("the harness sent a message of {} bytes (the limit is {})",
                                      n, kMaxHarnessMessage));
      }
      return std::string(buffer.data(), static_cast<std::size_t>(n));
    }
    if (fds[1].fd >= 0 && (fds[1].revents & POLLIN)) {
      // The child is gone; a reply it sent just before is still read above on the next turn.
      child_exited = true;
      pollfd last = {parent_, POLLIN, 0};
      if (::poll(&last, 1, 0) == 0) return Unavailable("the harness exited");
    }
  }
}

}  // namespace kforge
