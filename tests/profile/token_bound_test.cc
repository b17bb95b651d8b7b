// The summary stays under the token bound whatever the profile holds: worst cases built from
// many kernels with long template names, every counter, many long hints and notes.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "kforge/profile/parsers.h"
#include "kforge/profile/reducer.h"
#include "test_files.h"

namespace kforge::profile {
namespace {

Profile Huge(Tool tool, int kernels) {
  Profile p;
  p.tool = tool;
  p.device = "NVIDIA H200";
  p.calls = 3;
  for (int i = 0; i < kernels; ++i) {
    KernelRecord k;
    k.name = fmt::format("void at::native::(anonymous namespace)::very_long_template_kernel_{}<float, "
                         "at::native::ReduceOp<float, at::native::MeanOps<float, float>, unsigned int, "
                         "float, 4>, 512, 4, 8>(at::native::ReduceOp<...>)", i);
    k.duration_ns = 1000.0 + i;
    k.start_ns = i * 2000.0;
    k.end_ns = i * 2000.0 + 1000.0 + i;
    for (int m = 0; m < 40; ++m) {
      k.metrics[fmt::format("smsp__average_warps_issue_stalled_reason{}_per_issue_active.ratio", m)] = m;
    }
    k.metrics["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = 50;
    k.metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 40;
    k.metrics["launch__registers_per_thread"] = 64;
    p.kernels.push_back(std::move(k));
  }
  for (int i = 0; i < 50; ++i) {
    p.hints.push_back({"k", fmt::format("Rule{}", i), std::string(2000, 'x'), 1.0 * i});
    p.notes.push_back(std::string(500, 'n'));
  }
  p.call_span_ns = {1e6, 1e6, 1e6};
  p.call_gap_ns = {1e5, 1e5, 1e5};
  p.call_wall_ns = {2e6, 2e6, 2e6};
  return p;
}

TEST(TokenBound, EstimateIsBytesOverThreeRoundedUp) {
  EXPECT_EQ(EstimateTokens(""), 0);
  EXPECT_EQ(EstimateTokens("abc"), 1);
  EXPECT_EQ(EstimateTokens("abcd"), 2);
}

TEST(TokenBound, WorstCasesStayUnderTheBound) {
  for (Tool tool : {Tool::kNcu, Tool::kTorch, Tool::kOpenCl, Tool::kNsys}) {
    for (int n : {1, 10, 500, 5000}) {
      ProfileSummary s = Summarize(Huge(tool, n), DatasheetPeaks("H200"));
      EXPECT_LE(s.estimated_tokens, kSummaryTokenBound) << ToolName(tool) << " " << n;
      EXPECT_LE(EstimateTokens(s.text), kSummaryTokenBound);
      // The bottleneck section is never the one dropped.
      EXPECT_NE(s.text.find("dominant bottleneck:"), std::string::npos);
    }
  }
}

TEST(TokenBound, DropsLowestPrioritySectionsFirst) {
  ProfileSummary s = Summarize(Huge(Tool::kNcu, 50), DatasheetPeaks("H200"), 300);
  EXPECT_LE(s.estimated_tokens, 300);
  ASSERT_FALSE(s.dropped_sections.empty());
  EXPECT_EQ(s.dropped_sections.front(), "Notes");
}

// KernelBench level 1 and 2 references profiled on the H200 (bench/h200_profile_levels.sh) are
// kept under tests/fixtures/profile/h200/levels/<task>/; every one's summary must stay under the
// bound. Until they exist this checks the synthetic worst cases above only, and says so.
TEST(TokenBound, KernelBenchLevelFixtures) {
  const auto dir = std::filesystem::path(KFORGE_SOURCE_HOME) / "tests" / "fixtures" / "profile" / "h200" / "levels";
  if (!std::filesystem::exists(dir)) {
    GTEST_SKIP() << "no KernelBench level profiles at " << dir
                 << " yet: run bench/h200_profile_levels.sh on the H200 and add its output there";
  }
  int checked = 0;
  for (const auto& task : std::filesystem::directory_iterator(dir)) {
    for (const char* file : {"ncu.raw.csv", "torch.json"}) {
      const auto path = task.path() / file;
      if (!std::filesystem::exists(path)) continue;
      auto p = std::string(file) == "torch.json" ? ParseTorchChromeTrace(Slurp(path))
                                                 : ParseNcuRawCsv(Slurp(path));
      ASSERT_TRUE(p) << path << ": " << p.error().message;
      ProfileSummary s = Summarize(*p, DatasheetPeaks(p->device));
      EXPECT_LE(s.estimated_tokens, kSummaryTokenBound) << path;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0) << "the levels folder holds no ncu.raw.csv or torch.json";
}

}  // namespace
}  // namespace kforge::profile
