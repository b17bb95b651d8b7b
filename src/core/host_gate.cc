#include "kforge/core/host_gate.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "kforge/core/hash.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Byte layout of the lock file: a turnstile, then the host's range. The CPU is the first byte of
// the range; each device hashes to one of the others. Compiles read-lock the whole range, CPU
// timings write-lock it, a device timing write-locks its byte.
constexpr off_t kTurnstile = 0;
constexpr off_t kRangeStart = 1;
constexpr off_t kRangeBytes = 4096;
constexpr auto kPoll = std::chrono::milliseconds(2);

bool TryLock(int fd, short type, off_t start, off_t len) {
  struct flock lock{};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = start;
  lock.l_len = len;
  lock.l_pid = 0;  // required for OFD locks
  return ::fcntl(fd, F_OFD_SETLK, &lock) == 0;
}

void Unlock(int fd, off_t start, off_t len) {
  struct flock lock{};
  lock.l_type = F_UNLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = start;
  lock.l_len = len;
  ::fcntl(fd, F_OFD_SETLK, &lock);
}

off_t DeviceByte(std::string_view device) {
  if (device == "cpu" || device.empty()) return kRangeStart;
  const std::string hex = Hasher().Add(device).Hex();
  const unsigned long h = std::strtoul(hex.substr(0, 8).c_str(), nullptr, 16);
  return kRangeStart + 1 + static_cast<off_t>(h % (kRangeBytes - 1));
}

// Waits until `attempt()` succeeds, polling; false when `stop` fired first.
template <typename F>
bool Await(std::stop_token stop, F attempt) {
  while (!attempt()) {
    if (stop.stop_requested()) return false;
    std::this_thread::sleep_for(kPoll);
  }
  return true;
}

// Opens `path` for reading and writing, creating it (mode 0666) if absent; never follows an
// O_CREAT onto another user's file in a sticky folder (fs.protected_regular refuses that).
int OpenShared(const fs::path& path) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 || errno != ENOENT) return fd;
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd >= 0) {
      ::fchmod(fd, 0666);  // the umask would narrow it
      return fd;
    }
    if (errno != EEXIST) return -1;
  }
  return -1;
}

fs::path DefaultLockFile() {
  const char* forced = std::getenv("KFORGE_HOST_GATE");
  if (forced != nullptr && std::string_view(forced) == "none") return {};
  if (forced != nullptr && *forced != '\0') return forced;
  return "/tmp/kforge-host-gate";
}

}  // namespace

HostGate::Lease::Lease(Lease&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), waited_seconds_(other.waited_seconds_) {}

HostGate::Lease& HostGate::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    waited_seconds_ = other.waited_seconds_;
  }
  return *this;
}

HostGate::Lease::~Lease() {
  if (fd_ >= 0) ::close(fd_);  // closing the description releases its locks
}

HostGate& HostGate::Default() {
  static HostGate gate = [] {
    fs::path file = DefaultLockFile();
    if (file.empty()) return HostGate(file);
    int fd = OpenShared(file);
    if (fd < 0) {
      const fs::path own = fmt::format("{}-{}", file.string(), ::geteuid());
      spdlog::warn(
          "cannot open the host gate {} for writing ({}): using {}, so compiles and timings of "
          "other users' KForge runs on this host are not kept apart from this one's",
          file.string(), std::strerror(errno), own.string());
      file = own;
    } else {
      ::close(fd);
    }
    return HostGate(file);
  }();
  return gate;
}

HostGate::HostGate(fs::path lock_file) : lock_file_(std::move(lock_file)) {}

Result<int> HostGate::Open() const {
  int fd = OpenShared(lock_file_);
  if (fd < 0) {
    return IoError(fmt::format("cannot open the host gate {}: {} (set KFORGE_HOST_GATE to "
                               "another file, or to none to turn the gate off)",
                               lock_file_.string(), std::strerror(errno)));
  }
  return fd;
}

Result<HostGate::Lease> HostGate::Compile(std::stop_token stop) const {
  Lease lease;
  if (!enabled()) return lease;
  auto fd = Open();
  if (!fd) return std::unexpected(fd.error());
  lease.fd_ = *fd;
  const auto start = Clock::now();
  // Enter only past the turnstile (no timing waiting or entering), and never wait inside it:
  // a compile that finds the range taken lets the next timing in.
  const bool got = Await(stop, [&] {
    if (!TryLock(lease.fd_, F_RDLCK, kTurnstile, 1)) return false;
    const bool in = TryLock(lease.fd_, F_RDLCK, kRangeStart, kRangeBytes);
    Unlock(lease.fd_, kTurnstile, 1);
    return in;
  });
  if (!got) return MakeError(ErrorCode::kCancelled, "cancelled while waiting for the host gate");
  lease.waited_seconds_ = std::chrono::duration<double>(Clock::now() - start).count();
  return lease;
}

Result<HostGate::Lease> HostGate::Timing(std::string_view device, std::stop_token stop) const {
  Lease lease;
  if (!enabled()) return lease;
  auto fd = Open();
  if (!fd) return std::unexpected(fd.error());
  lease.fd_ = *fd;
  const auto start = Clock::now();
  const bool cpu = device == "cpu" || device.empty();
  const off_t first = cpu ? kRangeStart : DeviceByte(device);
  const off_t len = cpu ? kRangeBytes : 1;
  // Hold the turnstile (new compiles wait) until the running ones have left the range.
  if (!Await(stop, [&] { return TryLock(lease.fd_, F_WRLCK, kTurnstile, 1); })) {
    return MakeError(ErrorCode::kCancelled, "cancelled while waiting for the host gate");
  }
  const bool got = Await(stop, [&] {
    // The host's CPU byte: a device timing takes it shared, so CPU timings exclude it.
    if (!cpu && !TryLock(lease.fd_, F_RDLCK, kRangeStart, 1)) return false;
    if (TryLock(lease.fd_, F_WRLCK, first, len)) return true;
    if (!cpu) Unlock(lease.fd_, kRangeStart, 1);
    return false;
  });
  Unlock(lease.fd_, kTurnstile, 1);
  if (!got) return MakeError(ErrorCode::kCancelled, "cancelled while waiting for the host gate");
  lease.waited_seconds_ = std::chrono::duration<double>(Clock::now() - start).count();
  return lease;
}

}  // namespace kforge
