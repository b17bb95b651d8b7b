#include "kforge/app/task_spec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <vector>

namespace kforge::app {

namespace fs = std::filesystem;

Result<Task> LoadTaskSpec(const std::string& spec) {
  const auto hash = spec.rfind('#');
  if (hash != std::string::npos && spec.substr(0, hash).ends_with(".toml")) {
    const std::string suite_path = spec.substr(0, hash);
    const std::string id = spec.substr(hash + 1);
    auto suite = LoadSuite(suite_path);
    if (!suite) return std::unexpected(suite.error());
    std::vector<std::string> ids;
    for (const Task& t : suite->tasks) {
      if (t.id == id || t.name == id) return t;
      ids.push_back(t.id);
    }
    return NotFound(fmt::format("suite {} has no task '{}'; its tasks: {}", suite_path, id,
                                fmt::join(ids, ", ")));
  }
  return LoadTask(spec);
}

std::string AbsoluteTaskSpec(const std::string& spec) {
  std::error_code ec;
  const auto hash = spec.rfind('#');
  const std::string file = hash != std::string::npos ? spec.substr(0, hash) : spec;
  if (file.empty() || !fs::exists(file, ec)) return spec;
  const std::string absolute = fs::absolute(file, ec).lexically_normal().string();
  return hash != std::string::npos ? absolute + spec.substr(hash) : absolute;
}

}  // namespace kforge::app
