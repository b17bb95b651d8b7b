// The H200 evidence of the profile adapters: candidates built to have one bottleneck each
// (tests/fixtures/profile/candidates/, profiled by bench/h200_profile.sh) — the summary of each
// one's real ncu output names that bottleneck. The raw outputs live in
// tests/fixtures/profile/h200/<name>/ (ncu.raw.csv, ncu.details.csv, torch.json); until they are
// added each case skips and says so.
#include <gtest/gtest.h>

#include "kforge/profile/parsers.h"
#include "kforge/profile/reducer.h"
#include "test_files.h"

namespace kforge::profile {
namespace {

namespace fs = std::filesystem;

const fs::path kH200 = fs::path(KFORGE_SOURCE_HOME) / "tests" / "fixtures" / "profile" / "h200";

struct Case {
  const char* name;
  Bottleneck expected;
};

class H200Bottleneck : public testing::TestWithParam<Case> {};

TEST_P(H200Bottleneck, SummaryNamesTheBuiltInBottleneck) {
  const Case& c = GetParam();
  const fs::path dir = kH200 / c.name;
  const fs::path raw = dir / "ncu.raw.csv";
  if (!fs::exists(raw)) {
    GTEST_SKIP() << "H200 fixtures missing: " << raw
                 << " (run bench/h200_profile.sh on the H200 and copy $OUT/profile-fixtures/"
                 << c.name << "/ there)";
  }
  auto p = ParseNcuRawCsv(Slurp(raw));
  ASSERT_TRUE(p) << p.error().message;
  if (fs::exists(dir / "ncu.details.csv")) {
    ASSERT_TRUE(AddNcuDetailsCsv(Slurp(dir / "ncu.details.csv"), &*p));
  }
  ProfileSummary s = Summarize(*p, DatasheetPeaks(p->device));
  EXPECT_EQ(BottleneckName(s.bottleneck), BottleneckName(c.expected)) << s.text;
  EXPECT_LE(s.estimated_tokens, kSummaryTokenBound);
  if (fs::exists(dir / "torch.json")) {
    auto t = ParseTorchChromeTrace(Slurp(dir / "torch.json"));
    ASSERT_TRUE(t) << t.error().message;
    ProfileSummary ts = Summarize(*t, DatasheetPeaks(t->device));
    EXPECT_LE(ts.estimated_tokens, kSummaryTokenBound);
    // Without counters, only the launch-bound case is visible in a trace.
    if (c.expected == Bottleneck::kLaunchBound) {
      EXPECT_EQ(ts.bottleneck, Bottleneck::kLaunchBound) << ts.text;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Candidates, H200Bottleneck,
    testing::Values(Case{"memory_coalesced", Bottleneck::kMemoryBound},
                    Case{"uncoalesced", Bottleneck::kUncoalesced},
                    Case{"compute_bound", Bottleneck::kComputeBound},
                    Case{"register_pressure", Bottleneck::kRegisterPressure},
                    Case{"launch_bound", Bottleneck::kLaunchBound},
                    Case{"bank_conflicts", Bottleneck::kBankConflicts}),
    [](const testing::TestParamInfo<Case>& tp) { return std::string(tp.param.name); });

}  // namespace
}  // namespace kforge::profile
