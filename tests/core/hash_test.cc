#include "kforge/core/hash.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

TEST(HashTest, SameContentSameHash) {
  EXPECT_EQ(ContentHash("abc"), ContentHash("abc"));
  EXPECT_NE(ContentHash("abc"), ContentHash("abd"));
  EXPECT_EQ(ContentHash("abc").size(), 32u);
}

TEST(HashTest, HasherSeparatesParts) {
  EXPECT_NE(Hasher().Add("ab").Add("c").Hex(), Hasher().Add("a").Add("bc").Hex());
  EXPECT_EQ(Hasher().Add("ab").Add("c").Hex(), Hasher().Add("ab").Add("c").Hex());
}

}  // namespace
}  // namespace kforge
