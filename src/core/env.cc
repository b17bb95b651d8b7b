#include "kforge/core/env.h"

#include <unistd.h>

#include <cstdlib>

#include "kforge/core/files.h"

namespace kforge {
namespace {

class PosixEnv : public Env {
 public:
  std::optional<std::string> GetVar(std::string_view name) const override {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  }
  std::string FindProgram(std::string_view name) const override {
    return ::kforge::FindProgram(name);
  }
  bool Exists(const std::filesystem::path& path) const override {
    std::error_code ec;
    return std::filesystem::exists(path, ec);
  }
  bool IsExecutable(const std::filesystem::path& path) const override {
    return ::access(path.c_str(), X_OK) == 0;
  }
  Result<std::string> ReadFile(const std::filesystem::path& path) const override {
    return ::kforge::ReadFile(path);
  }
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::now();
  }
  Result<ProcessResult> Run(const ProcessSpec& spec, std::stop_token stop) const override {
    return RunProcess(spec, stop);
  }
};

}  // namespace

const Env& Env::Default() {
  static const PosixEnv env;
  return env;
}

}  // namespace kforge
