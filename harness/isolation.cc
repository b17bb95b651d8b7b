#include "isolation.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <cerrno>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace kforge_harness {
namespace {

// True unless a connection to 1.1.1.1:53 succeeds within 0.5 s (UDP first: no route answers at
// once).
bool NetworkBlocked() {
  for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
    const int s = ::socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) return true;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(53);
    ::inet_pton(AF_INET, "1.1.1.1", &addr.sin_addr);
    int rc = ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    bool connected = rc == 0;
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{s, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof(err);
      connected = ::poll(&p, 1, 500) == 1 &&
                  ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    ::close(s);
    if (!connected) return true;
  }
  return false;
}

bool RootReadOnly() {
  for (const char* dir : {"/", "/usr"}) {
    const std::string path = std::string(dir) + (dir[1] ? "/" : "") + ".kforge_isolation_probe_" +
                             std::to_string(::getpid());
    const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) continue;
    ::close(fd);
    ::unlink(path.c_str());
    return false;
  }
  return true;
}

std::string User() {
  const uid_t uid = ::geteuid();
  if (const passwd* p = ::getpwuid(uid); p != nullptr) return p->pw_name;
  return std::to_string(uid);
}

}  // namespace

std::string ObserveIsolationJson() {
  return std::string("{\"network_blocked\": ") + (NetworkBlocked() ? "true" : "false") +
         ", \"root_read_only\": " + (RootReadOnly() ? "true" : "false") + ", \"user\": \"" +
         User() + "\"}";
}

}  // namespace kforge_harness
