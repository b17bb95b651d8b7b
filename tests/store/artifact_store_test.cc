#include "kforge/store/artifact_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "kforge/core/files.h"
#include "kforge/core/hash.h"
#include "scratch_dir.h"

namespace kforge::store {
namespace {

namespace fs = std::filesystem;

TEST(ArtifactStoreTest, PutGetRoundTripUnderHashPath) {
  ScratchDir dir;
  auto store = ArtifactStore::Open(dir.path() / "artifacts");
  ASSERT_TRUE(store.has_value()) << store.error().ToString();
  std::string bytes("__global__ void k() {}\n\0binary\xff", 32);
  auto hash = store->Put(bytes);
  ASSERT_TRUE(hash.has_value()) << hash.error().ToString();
  EXPECT_EQ(*hash, ContentHash(bytes));
  EXPECT_EQ(store->Path(*hash), dir.path() / "artifacts" / hash->substr(0, 2) / *hash);
  EXPECT_TRUE(fs::exists(store->Path(*hash)));
  auto back = store->Get(*hash);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, bytes);
}

TEST(ArtifactStoreTest, EmptyBlobIsAnArtifact) {
  ScratchDir dir;
  auto store = ArtifactStore::Open(dir.path());
  ASSERT_TRUE(store.has_value());
  auto hash = store->Put("");
  ASSERT_TRUE(hash.has_value());
  EXPECT_EQ(store->Get(*hash).value(), "");
}

TEST(ArtifactStoreTest, SameContentIsStoredOnce) {
  ScratchDir dir;
  auto store = ArtifactStore::Open(dir.path());
  ASSERT_TRUE(store.has_value());
  auto first = store->Put("same bytes");
  ASSERT_TRUE(first.has_value());
  auto mtime = fs::last_write_time(store->Path(*first));
  auto second = store->Put("same bytes");
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(fs::last_write_time(store->Path(*first)), mtime);  // not rewritten
  EXPECT_NE(*store->Put("other bytes"), *first);
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir.path())) {
    if (entry.is_regular_file()) ++files;
  }
  EXPECT_EQ(files, 2u);
}

TEST(ArtifactStoreTest, DamagedBlobIsReportedNotReturned) {
  ScratchDir dir;
  auto store = ArtifactStore::Open(dir.path());
  ASSERT_TRUE(store.has_value());
  auto hash = store->Put("original content");
  ASSERT_TRUE(hash.has_value());
  ASSERT_TRUE(WriteFile(store->Path(*hash), "tampered content").has_value());
  auto back = store->Get(*hash);
  ASSERT_FALSE(back.has_value());
  EXPECT_EQ(back.error().code, ErrorCode::kIo);
  EXPECT_NE(back.error().message.find("damaged"), std::string::npos);
}

TEST(ArtifactStoreTest, TruncatedBlobIsRepairedByPut) {
  ScratchDir dir;
  auto store = ArtifactStore::Open(dir.path());
  ASSERT_TRUE(store.has_value());
  auto hash = store->Put("content that a power loss truncated");
  ASSERT_TRUE(hash.has_value());
  ASSERT_TRUE(WriteFile(store->Path(*hash), "").has_value());
  EXPECT_FALSE(store->Get(*hash).has_value());
  ASSERT_EQ(store->Put("content that a power loss truncated").value(), *hash);
  EXPECT_EQ(store->Get(*hash).value(), "content that a power loss truncated");
}

TEST(ArtifactStoreTest, MissingAndMalformedHashes) {
  ScratchDir dir;
  auto store = ArtifactStore::Open(dir.path());
  ASSERT_TRUE(store.has_value());
  auto missing = store->Get(ContentHash("never stored"));
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  for (const std::string bad : {"", "../../etc/passwd", "ABCDEF0123456789ABCDEF0123456789",
                                "0123456789abcdef0123456789abcde", "0123456789abcdef0123456789abcdeg"}) {
    auto got = store->Get(bad);
    ASSERT_FALSE(got.has_value()) << bad;
    EXPECT_EQ(got.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_TRUE(store->Path(bad).empty()) << bad;
  }
}

TEST(ArtifactStoreTest, ConcurrentPutsOfTheSameAndDifferentContent) {
  ScratchDir dir;
  auto store = ArtifactStore::Open(dir.path());
  ASSERT_TRUE(store.has_value());
  constexpr int kThreads = 8;
  constexpr int kPuts = 50;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPuts; ++i) {
        if (!store->Put("shared blob").has_value()) ++failures;
        if (!store->Put(fmt::format("blob {} {}", t, i)).has_value()) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store->Get(ContentHash("shared blob")).value(), "shared blob");
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPuts; ++i) {
      std::string bytes = fmt::format("blob {} {}", t, i);
      EXPECT_EQ(store->Get(ContentHash(bytes)).value(), bytes);
    }
  }
}

}  // namespace
}  // namespace kforge::store
