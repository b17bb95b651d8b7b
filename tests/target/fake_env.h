// A fake Env for tests: the programs, files and variables it is told about exist; processes are
// answered from canned outputs keyed by argv[0] (every run is recorded).
#ifndef KFORGE_TESTS_TARGET_FAKE_ENV_H_
#define KFORGE_TESTS_TARGET_FAKE_ENV_H_

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kforge/core/env.h"

namespace kforge::testing {

class FakeEnv : public Env {
 public:
  // `name` is found on the fake PATH at `path`.
  void AddProgram(const std::string& name, const std::string& path) {
    programs_[name] = path;
    files_.insert(path);
  }
  void AddFile(const std::string& path) { files_.insert(path); }
  void SetVar(const std::string& name, const std::string& value) { vars_[name] = value; }
  // What running `program` (argv[0]) prints on stdout.
  void SetOutput(const std::string& program, const std::string& stdout_text) {
    outputs_[program] = stdout_text;
  }
  std::vector<std::vector<std::string>> runs() const {
    std::lock_guard lock(mu_);
    return runs_;
  }

  std::optional<std::string> GetVar(std::string_view name) const override {
    auto it = vars_.find(std::string(name));
    if (it == vars_.end()) return std::nullopt;
    return it->second;
  }
  std::string FindProgram(std::string_view name) const override {
    if (name.find('/') != std::string_view::npos) {
      return files_.contains(std::string(name)) ? std::string(name) : std::string();
    }
    auto it = programs_.find(std::string(name));
    return it == programs_.end() ? std::string() : it->second;
  }
  bool Exists(const std::filesystem::path& path) const override {
    return files_.contains(path.string());
  }
  bool IsExecutable(const std::filesystem::path& path) const override {
    return files_.contains(path.string());
  }
  Result<std::string> ReadFile(const std::filesystem::path& path) const override {
    return NotFound("fake env: no file " + path.string());
  }
  std::chrono::steady_clock::time_point Now() const override { return {}; }
  Result<ProcessResult> Run(const ProcessSpec& spec, std::stop_token) const override {
    {
      std::lock_guard lock(mu_);
      runs_.push_back(spec.argv);
    }
    ProcessResult r;
    r.state = ProcessState::kDone;
    r.exit_code = 0;
    if (auto it = outputs_.find(spec.argv.empty() ? "" : spec.argv[0]); it != outputs_.end()) {
      r.stdout_text = it->second;
    }
    return r;
  }

 private:
  std::map<std::string, std::string> programs_;
  std::set<std::string> files_;
  std::map<std::string, std::string> vars_;
  std::map<std::string, std::string> outputs_;
  mutable std::mutex mu_;
  mutable std::vector<std::vector<std::string>> runs_;
};

}  // namespace kforge::testing

#endif  // KFORGE_TESTS_TARGET_FAKE_ENV_H_
