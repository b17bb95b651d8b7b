#include "kforge/eval/harness_binary.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace kforge {

namespace fs = std::filesystem;

Result<fs::path> HarnessBinary(std::string_view adapter) {
  const std::string name = fmt::format("kforge-harness-{}", adapter);
  std::vector<fs::path> dirs;
  if (const char* dir = std::getenv("KFORGE_HARNESS_DIR"); dir != nullptr && *dir != '\0') {
    dirs.emplace_back(dir);
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path());
    dirs.push_back(exe.parent_path() / "harness");
    dirs.push_back(exe.parent_path().parent_path() / "harness");
  }
#ifdef KFORGE_HARNESS_BUILD_DIR
  dirs.emplace_back(KFORGE_HARNESS_BUILD_DIR);
#endif
  std::string looked;
  for (const auto& d : dirs) {
    const fs::path candidate = d / name;
    if (::access(candidate.c_str(), X_OK) == 0) return fs::absolute(candidate);
    looked += looked.empty() ? d.string() : ", " + d.string();
  }
  return Unavailable(fmt::format(
      "{} is not built (looked in {}): build it with `cmake --build --preset dev --target {}` "
      "or point KFORGE_HARNESS_DIR at the folder that holds it",
      name, looked, name));
}

}  // namespace kforge
