#include "kforge/core/files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kforge {
namespace {

namespace fs = std::filesystem;

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kforge-files-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FilesTest, ReadFileGivesBackWhatWriteFileWrote) {
  std::string binary;
  for (int i = 0; i < 256; ++i) binary += static_cast<char>(i);
  // Sizes around the read sizes: empty, one byte, a page, a page and one, several MB.
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{4096}, std::size_t{4097},
                           std::size_t{3} << 20}) {
    std::string bytes;
    while (bytes.size() < size) bytes += binary;
    bytes.resize(size);
    // (path += rather than "f" + std::to_string: GCC 12's -Wrestrict misfires on the latter at -O3)
    fs::path path = dir_ / "f";
    path += std::to_string(size);
    ASSERT_TRUE(WriteFile(path, bytes).has_value());
    auto read = ReadFile(path);
    ASSERT_TRUE(read.has_value()) << read.error().message;
    EXPECT_EQ(read->size(), size);
    EXPECT_TRUE(*read == bytes) << size;
  }
}

// Several tasks of a bench writing one best kernel at once failed with "cannot rename
// ...kernel.cpp.tmp<pid> ...": the threads of one process shared one temporary name.
TEST_F(FilesTest, ConcurrentWritesOfOnePathAllSucceed) {
  const fs::path path = dir_ / "best" / "kernel.cpp";
  std::atomic<int> failures{0};
  std::string first_failure;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        auto written = WriteFile(path, std::string(1000, static_cast<char>('a' + t)));
        if (!written) {
          std::lock_guard lock(mu);
          if (failures++ == 0) first_failure = written.error().message;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0) << first_failure;
  auto text = ReadFile(path);
  ASSERT_TRUE(text);
  EXPECT_EQ(text->size(), 1000u);
  EXPECT_EQ(text->find_first_not_of(text->front()), std::string::npos) << "a torn write";
  for (const auto& entry : fs::directory_iterator(path.parent_path())) {
    EXPECT_EQ(entry.path(), path) << "a temporary file was left behind";
  }
}

TEST_F(FilesTest, ReadFileReadsFilesThatStateNoSize) {
  // /proc files state a size of 0 and are read to their end.
  auto status = ReadFile("/proc/self/status");
  ASSERT_TRUE(status.has_value()) << status.error().message;
  EXPECT_NE(status->find("Name:"), std::string::npos);
}

TEST_F(FilesTest, ReadFileOfAMissingFileNamesIt) {
  auto missing = ReadFile(dir_ / "nope");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kIo);
  EXPECT_NE(missing.error().message.find((dir_ / "nope").string()), std::string::npos);
  EXPECT_NE(missing.error().message.find("No such file"), std::string::npos);
}

}  // namespace
}  // namespace kforge
