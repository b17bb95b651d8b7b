// A fresh directory under the system temp dir, removed with its contents at scope exit.
#ifndef KFORGE_TESTS_LLM_TEMP_DIR_H_
#define KFORGE_TESTS_LLM_TEMP_DIR_H_

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace kforge::llm::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("kforge-llm-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace kforge::llm::testing

#endif  // KFORGE_TESTS_LLM_TEMP_DIR_H_
