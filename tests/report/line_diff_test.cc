#include "kforge/report/line_diff.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace kforge::report {
namespace {

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) {
    out += l;
    out += '\n';
  }
  return out;
}

// Length of the longest common subsequence of the lines, by dynamic programming.
int Lcs(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::vector<int>> t(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      t[i][j] = a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
    }
  }
  return t[a.size()][b.size()];
}

TEST(LineDiff, SameTextsHaveNoDiff) {
  EXPECT_EQ(UnifiedDiff("a\nb\n", "a\nb\n", "x", "y"), "");
  EXPECT_EQ(UnifiedDiff("", "", "x", "y"), "");
}

TEST(LineDiff, OneChangedLineGivesOneHunkWithContext) {
  const std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  const std::string b = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
  EXPECT_EQ(UnifiedDiff(a, b, "old", "new"),
            "--- old\n+++ new\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

TEST(LineDiff, InsertionIntoEmptyAndFarApartChanges) {
  EXPECT_EQ(UnifiedDiff("", "x\n", "a", "b"), "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+x\n");
  std::vector<std::string> a, b;
  for (int i = 0; i < 20; ++i) a.push_back(std::to_string(i));
  b = a;
  b[1] = "one";
  b[18] = "eighteen";
  const std::string diff = UnifiedDiff(Join(a), Join(b), "a", "b", 2);
  EXPECT_EQ(diff,
            "--- a\n+++ b\n@@ -1,4 +1,4 @@\n 0\n-1\n+one\n 2\n 3\n@@ -17,4 +17,4 @@\n 16\n 17\n-18\n+eighteen\n 19\n");
}

TEST(LineDiff, ScriptIsMinimalAndReproducesBothTexts) {
  std::mt19937 rng(3);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> a, b;
    const int na = static_cast<int>(rng() % 25), nb = static_cast<int>(rng() % 25);
    for (int i = 0; i < na; ++i) a.push_back(std::string(1, static_cast<char>('a' + rng() % 4)));
    for (int i = 0; i < nb; ++i) b.push_back(std::string(1, static_cast<char>('a' + rng() % 4)));
    const std::string at = Join(a), bt = Join(b);
    const auto lines = DiffLines(at, bt);
    std::vector<std::string> ra, rb;
    int equal = 0;
    for (const auto& l : lines) {
      if (l.op != DiffOp::kInsert) ra.emplace_back(l.text);
      if (l.op != DiffOp::kDelete) rb.emplace_back(l.text);
      if (l.op == DiffOp::kEqual) ++equal;
    }
    ASSERT_EQ(ra, a) << "round " << round;
    ASSERT_EQ(rb, b) << "round " << round;
    ASSERT_EQ(equal, Lcs(a, b)) << "round " << round;  // shortest edit script = LCS kept
  }
}

TEST(LineDiff, TooManyEditsFallsBackToReplaceAll) {
  std::string a, b;
  for (int i = 0; i < 50; ++i) {
    a += fmt::format("a{}\n", i);
    b += fmt::format("b{}\n", i);
  }
  const auto lines = DiffLines(a, b, /*max_edits=*/10);
  ASSERT_EQ(lines.size(), 100u);
  EXPECT_EQ(lines.front().op, DiffOp::kDelete);
  EXPECT_EQ(lines.back().op, DiffOp::kInsert);
}

}  // namespace
}  // namespace kforge::report
