#include "kforge/core/nearest_name.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

TEST(NearestNameTest, EditDistanceCountsEditsAndSwaps) {
  EXPECT_EQ(EditDistance("overides", "overrides"), 1);
  EXPECT_EQ(EditDistance("evall", "eval"), 1);
  EXPECT_EQ(EditDistance("ovreride", "override"), 1);  // a swap of neighbours
  EXPECT_EQ(EditDistance("Batch_Size", "batch_size"), 0);
  EXPECT_EQ(EditDistance("", "abc"), 3);
}

TEST(NearestNameTest, SuggestsTheNearestWhenItIsATypo) {
  const std::vector<std::string> keys = {"id", "source", "policy", "overrides"};
  EXPECT_EQ(NearestName("overides", keys), "overrides");
  EXPECT_EQ(NearestName("sorce", keys), "source");
  EXPECT_EQ(NearestName("tolerance", keys), std::nullopt);  // nothing near
  EXPECT_EQ(NearestName("source", keys), std::nullopt);     // not a typo
  EXPECT_EQ(DidYouMean("overides", keys), " (did you mean 'overrides'?)");
  EXPECT_EQ(DidYouMean("zzz", keys), "");
  const std::vector<std::string> commands = {"targets", "eval", "run", "resume", "bench"};
  EXPECT_EQ(NearestName("evall", commands), "eval");
  EXPECT_EQ(NearestName("rsume", commands), "resume");
}

}  // namespace
}  // namespace kforge
