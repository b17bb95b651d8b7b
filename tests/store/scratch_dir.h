// A fresh directory per test, removed afterwards.
#ifndef KFORGE_TESTS_STORE_SCRATCH_DIR_H_
#define KFORGE_TESTS_STORE_SCRATCH_DIR_H_

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

namespace kforge::store {

class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            fmt::format("kforge-store-{}-{}-{}-{}", info != nullptr ? info->name() : "test",
                        ::getpid(), counter++, ::gettid());
    std::filesystem::remove_all(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace kforge::store

#endif  // KFORGE_TESTS_STORE_SCRATCH_DIR_H_
