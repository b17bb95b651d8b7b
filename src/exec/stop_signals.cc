#include "kforge/exec/stop_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <csignal>

namespace kforge::exec {
namespace {

// One StopSignals at a time owns the handlers; the pipe's write end is all a handler touches.
std::atomic<int> g_write_fd{-1};
std::atomic<int> g_last_signal{0};
struct sigaction g_old_int {};
struct sigaction g_old_term {};

extern "C" void OnStopSignal(int sig) {
  g_last_signal.store(sig);
  const int fd = g_write_fd.load();
  if (fd >= 0) {
    const char byte = 1;
    [[maybe_unused]] auto n = ::write(fd, &byte, 1);
  }
}

}  // namespace

StopSignals::StopSignals(std::function<void(int)> on_signal) : on_signal_(std::move(on_signal)) {
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return;  // no signals; RequestStop still works
  g_write_fd.store(fds[1]);
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
  const int read_fd = fds[0];
  watcher_ = std::jthread([this, read_fd](std::stop_token quit) {
    int count = 0;
    while (!quit.stop_requested()) {
      pollfd p{read_fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[16];
      const auto n = ::read(read_fd, buf, sizeof buf);
      for (ssize_t i = 0; i < n; ++i) {
        ++count;
        if (count == 1) {
          stop_.request_stop();
        } else {
          stop_.request_stop();
          abandon_.request_stop();
          cancel_.Cancel();
        }
        if (on_signal_) on_signal_(count);
      }
    }
    ::close(read_fd);
  });
}

StopSignals::~StopSignals() {
  const int fd = g_write_fd.exchange(-1);
  if (fd >= 0) {
    sigaction(SIGINT, &g_old_int, nullptr);
    sigaction(SIGTERM, &g_old_term, nullptr);
    watcher_.request_stop();
    watcher_ = {};
    ::close(fd);
  }
}

int StopSignals::signal_number() const { return g_last_signal.load(); }

void StopSignals::RequestStop() { stop_.request_stop(); }

}  // namespace kforge::exec
