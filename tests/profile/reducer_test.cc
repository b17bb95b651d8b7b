// The reducer: bottleneck classification on fixtures built to show one bottleneck each, golden
// summaries (KFORGE_UPDATE_GOLDEN=1 rewrites them; review the diff), and the token bound.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kforge/profile/parsers.h"
#include "kforge/profile/reducer.h"
#include "test_files.h"

namespace kforge::profile {
namespace {

namespace fs = std::filesystem;

const fs::path kGolden = fs::path(KFORGE_SOURCE_HOME) / "tests" / "profile" / "golden";

bool UpdateGolden() {
  const char* v = std::getenv("KFORGE_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

void ExpectGolden(const std::string& name, const std::string& text) {
  const fs::path path = kGolden / (name + ".txt");
  if (UpdateGolden()) {
    std::ofstream(path, std::ios::binary) << text;
    return;
  }
  ASSERT_TRUE(fs::exists(path)) << path << " is missing; create it with KFORGE_UPDATE_GOLDEN=1 and review it";
  EXPECT_EQ(Slurp(path), text) << "summary " << name
                               << " changed (if intended: KFORGE_UPDATE_GOLDEN=1, review the diff)";
}

Profile Ncu(const std::string& name) {
  auto p = ParseNcuRawCsv(Slurp(kFixtures / "ncu" / (name + ".raw.csv")));
  EXPECT_TRUE(p) << name;
  if (!p) return {};
  const fs::path details = kFixtures / "ncu" / (name + ".details.csv");
  if (fs::exists(details)) {
    EXPECT_TRUE(AddNcuDetailsCsv(Slurp(details), &*p));
  }
  return *p;
}

struct Case {
  const char* fixture;
  Bottleneck expected;
};

class NcuBottleneck : public testing::TestWithParam<Case> {};

TEST_P(NcuBottleneck, NamesTheBuiltInBottleneck) {
  const Case& c = GetParam();
  Profile p = Ncu(c.fixture);
  ProfileSummary s = Summarize(p, DatasheetPeaks(p.device));
  EXPECT_EQ(BottleneckName(s.bottleneck), BottleneckName(c.expected)) << s.text;
  EXPECT_NE(s.text.find("dominant bottleneck: " + BottleneckName(c.expected)), std::string::npos);
  EXPECT_FALSE(s.evidence.empty());
  EXPECT_LE(s.estimated_tokens, kSummaryTokenBound);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, NcuBottleneck,
    testing::Values(Case{"memory_bound", Bottleneck::kMemoryBound},
                    Case{"uncoalesced", Bottleneck::kUncoalesced},
                    Case{"compute_bound", Bottleneck::kComputeBound},
                    Case{"register_pressure", Bottleneck::kRegisterPressure},
                    Case{"launch_bound", Bottleneck::kLaunchBound},
                    Case{"bank_conflicts", Bottleneck::kBankConflicts}),
    [](const testing::TestParamInfo<Case>& tp) { return std::string(tp.param.fixture); });

TEST(Reducer, SpeedOfLightUsesThePeaksAndNamesTheirSource) {
  Profile p = Ncu("memory_bound");
  ProfileSummary s = Summarize(p, DatasheetPeaks("NVIDIA H200"));
  // 1342.18 MB in 290.4 us = 4622 GB/s, 96% of the datasheet's 4800 GB/s.
  EXPECT_NE(s.text.find("DRAM: 4622 GB/s = 96% of 4800 GB/s (datasheet (NVIDIA H200 SXM))"),
            std::string::npos)
      << s.text;
  ProfileSummary unknown = Summarize(p, PeakFacts{});
  EXPECT_NE(unknown.text.find("device peak unknown"), std::string::npos);
}

TEST(Reducer, TorchTraceReportsLaunchGaps) {
  auto p = ParseTorchChromeTrace(Slurp(kFixtures / "torch" / "cuda_three_kernels.json"));
  ASSERT_TRUE(p);
  ProfileSummary s = Summarize(*p, DatasheetPeaks(p->device));
  EXPECT_NE(s.text.find("gaps between kernels: 34%"), std::string::npos) << s.text;
  EXPECT_NE(s.text.find("per call: 3 kernel launches (3 distinct)"), std::string::npos) << s.text;
  // 47.5 us of kernels in a 120 us call: launch-bound.
  EXPECT_EQ(s.bottleneck, Bottleneck::kLaunchBound);
}

TEST(Reducer, IsDeterministic) {
  Profile p = Ncu("uncoalesced");
  EXPECT_EQ(Summarize(p, DatasheetPeaks(p.device)).text, Summarize(p, DatasheetPeaks(p.device)).text);
}

TEST(Reducer, Golden) {
  struct G {
    const char* name;
    Result<Profile> profile;
  };
  std::vector<G> cases;
  cases.push_back({"ncu_memory_bound", Ncu("memory_bound")});
  cases.push_back({"ncu_uncoalesced_with_rules", Ncu("uncoalesced")});
  cases.push_back({"ncu_register_pressure", Ncu("register_pressure")});
  cases.push_back({"torch_cuda", ParseTorchChromeTrace(Slurp(kFixtures / "torch" / "cuda_three_kernels.json"))});
  cases.push_back({"opencl_events", ParseOpenClEvents(Slurp(kFixtures / "other" / "opencl_events.json"))});
  cases.push_back({"nsys_kernel_sum", ParseNsysKernelSumCsv(Slurp(kFixtures / "other" / "nsys_cuda_gpu_kern_sum.csv"))});
  cases.push_back({"rocprofv3", ParseRocprofKernelTraceCsv(Slurp(kFixtures / "other" / "rocprofv3_kernel_trace.csv"))});
  for (auto& c : cases) {
    ASSERT_TRUE(c.profile) << c.name;
    ExpectGolden(c.name, Summarize(*c.profile, DatasheetPeaks(c.profile->device)).text);
  }
}

}  // namespace
}  // namespace kforge::profile
