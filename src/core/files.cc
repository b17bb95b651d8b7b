#include "kforge/core/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace kforge {

namespace fs = std::filesystem;

Result<std::string> ReadFile(const fs::path& path) {
  // read(2) into one string sized by fstat: a report reads 100,000 small artifacts, and a stream
  // copies each twice.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return IoError(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  }
  std::string out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    out.resize(static_cast<std::size_t>(st.st_size) + 1);  // + 1: the read that sees the end
  }
  std::size_t size = 0;
  for (;;) {
    if (size == out.size()) out.resize(std::max<std::size_t>(4096, out.size() * 2));
    const ssize_t n = ::read(fd, out.data() + size, out.size() - size);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return IoError(fmt::format("cannot read {}: {}", path.string(), std::strerror(err)));
    }
    if (n == 0) break;
    size += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(size);
  return out;
}

Status WriteFile(const fs::path& path, std::string_view contents) {
  if (path.has_parent_path()) KFORGE_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
  // One temporary name per write, so that writers of one path in this process (threads) or in
  // others never rename each other's file away; the last rename wins.
  static std::atomic<unsigned long> writes{0};
  fs::path tmp = path;
  tmp += fmt::format(".tmp{}.{}", ::getpid(), writes.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      return IoError(fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno)));
    }
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (!out) return IoError(fmt::format("short write to {}", tmp.string()));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return IoError(fmt::format("cannot rename {} to {}: {}", tmp.string(), path.string(),
                                     ec.message()));
  return Ok();
}

Status MakeDirs(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return IoError(fmt::format("cannot create directory {}: {}", path.string(), ec.message()));
  return Ok();
}

fs::path KforgeCacheDir() {
  if (const char* dir = std::getenv("KFORGE_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    return fs::path(dir);
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return fs::path(xdg) / "kforge";
  }
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr ? home : "/tmp") / ".cache" / "kforge";
}

fs::path KforgeHome() {
  if (const char* home = std::getenv("KFORGE_HOME"); home != nullptr && *home != '\0') {
    return fs::path(home);
  }
#ifdef KFORGE_SOURCE_HOME
  if (fs::exists(fs::path(KFORGE_SOURCE_HOME) / "runner")) return fs::path(KFORGE_SOURCE_HOME);
#endif
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path();
         dir = dir.parent_path()) {
      if (fs::exists(dir / "runner" / "kforge_runner")) return dir;
      if (fs::exists(dir / "share" / "kforge" / "runner")) return dir / "share" / "kforge";
    }
  }
  return fs::current_path();
}

}  // namespace kforge
