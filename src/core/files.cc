#include "kforge/core/files.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kforge {

namespace fs = std::filesystem;

Result<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return IoError(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

Status WriteFile(const fs::path& path, std::string_view contents) {
  if (path.has_parent_path()) KFORGE_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
  fs::path tmp = path;
  tmp += fmt::format(".tmp{}", ::getpid());
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
