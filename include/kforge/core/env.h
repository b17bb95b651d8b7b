// Env: the seam between KForge and the machine it runs on — environment variables, files,
// the clock and child processes (LevelDB's include/leveldb/env.h is the model). Code that asks the
// machine takes an Env (by reference, defaulting to Env::Default()), so that a test can answer
// instead: a fake Env says which compilers exist and what they print, and the compile command of
// an absent compiler (hipcc, icpx, acpp) is checked where none is installed.
//
// Ownership: the caller keeps the Env alive while anything it was given to uses it.
// Thread-safety: every method of an Env may be called from any thread; Default() is thread-safe.
#ifndef KFORGE_CORE_ENV_H_
#define KFORGE_CORE_ENV_H_

#include <chrono>
#include <filesystem>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "kforge/core/error.h"
#include "kforge/core/subprocess.h"

namespace kforge {

class Env {
 public:
  virtual ~Env() = default;

  // The real machine: getenv, access(2), std::filesystem, steady_clock, RunProcess.
  static const Env& Default();

  // An environment variable's value; nullopt when unset (an empty value is a value).
  virtual std::optional<std::string> GetVar(std::string_view name) const = 0;
  // The absolute path of program `name` on $PATH (a name with a '/' is checked as given); empty
  // when absent.
  virtual std::string FindProgram(std::string_view name) const = 0;
  // Whether `path` exists (any kind of file).
  virtual bool Exists(const std::filesystem::path& path) const = 0;
  // Whether `path` is a file this process may execute.
  virtual bool IsExecutable(const std::filesystem::path& path) const = 0;
  // A file's whole content.
  virtual Result<std::string> ReadFile(const std::filesystem::path& path) const = 0;
  // The monotonic clock.
  virtual std::chrono::steady_clock::time_point Now() const = 0;
  // Runs a child process (RunProcess's contract: errors only for failures to start).
  virtual Result<ProcessResult> Run(const ProcessSpec& spec, std::stop_token stop = {}) const = 0;
};

}  // namespace kforge

#endif  // KFORGE_CORE_ENV_H_
