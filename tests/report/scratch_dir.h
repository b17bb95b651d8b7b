// A fresh directory per test, removed afterwards (KFORGE_KEEP_SCRATCH=1 keeps it to look at).
#ifndef KFORGE_TESTS_REPORT_SCRATCH_DIR_H_
#define KFORGE_TESTS_REPORT_SCRATCH_DIR_H_

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>

namespace kforge::report::testing {

class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            fmt::format("kforge-report-{}-{}-{}", info != nullptr ? info->name() : "test", ::getpid(),
                        counter++);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    if (std::getenv("KFORGE_KEEP_SCRATCH") != nullptr) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace kforge::report::testing

#endif  // KFORGE_TESTS_REPORT_SCRATCH_DIR_H_
