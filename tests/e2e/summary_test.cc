// The e2e summary states how each figure was taken: a compile figure taken after dynamo hit its
// recompile limit is starred and explained, the limit in force is named, and calls left to the
// original forward are said to be eager calls.
#include "kforge/e2e/summary.h"

#include <gtest/gtest.h>

#include <string>

namespace kforge::e2e {
namespace {

Measurement TwoConfigurations() {
  Measurement m;
  m.torch_version = "2.11.0";
  m.tolerance = 1e-2;
  m.configurations = {{.name = "eager", .available = true, .why = ""},
                      {.name = "compile", .available = true, .why = ""}};
  m.timing = {
      {.batch_size = 8, .configuration = "eager", .median_s = 8e-3, .tokens_per_s = 1000},
      {.batch_size = 8, .configuration = "compile", .median_s = 4e-3, .tokens_per_s = 2000}};
  return m;
}

std::string Summary(const Measurement& m) {
  E2eOutcome outcome;
  outcome.measurement = m;
  return SummaryText(outcome);
}

TEST(E2eSummary, NamesTheRecompileLimitAndStarsFiguresTakenPastIt) {
  Measurement m = TwoConfigurations();
  std::string text = Summary(m);
  EXPECT_EQ(text.find("recompile limit"), std::string::npos) << text;  // no compile limit known
  EXPECT_NE(text.find(" 2000 tok/s"), std::string::npos) << text;

  m.dynamo_recompile_limit = 64;
  m.timing[1].recompile_limit_hit = true;
  text = Summary(m);
  EXPECT_NE(text.find("torch.compile: dynamic shapes, dynamo recompile limit 64"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("*2000 tok/s"), std::string::npos) << text;
  EXPECT_NE(text.find("* torch._dynamo hit its recompile limit"), std::string::npos) << text;
}

TEST(E2eSummary, CallsLeftToTheOriginalForwardAreCountedAsEagerCalls) {
  Measurement m = TwoConfigurations();
  m.coverage = {{.site = "GptOssExperts", .kernel_calls = 0, .unrouted_calls = 594},
                {.site = "GptOssRMSNorm", .kernel_calls = 1296, .unrouted_calls = 0}};
  const std::string text = Summary(m);
  EXPECT_NE(text.find("GptOssExperts: 594 eager call(s) did not match"), std::string::npos) << text;
  EXPECT_EQ(text.find("GptOssRMSNorm:"), std::string::npos) << text;
}

// The ranking is printed in rank order with the figure it is ranked by (time per step over all
// batch sizes), so that a share at the task's batch size that orders otherwise does not make the
// list look out of order.
TEST(E2eSummary, TheSiteRankingIsPrintedInOrderWithItsOwnFigure) {
  E2eOutcome outcome;
  outcome.profile.batch_sizes = {1, 8};
  outcome.profile.task_batch_size = 8;
  auto site = [](const char* name, int rank, double total_seconds, double share) {
    Site s;
    s.name = name;
    s.rank = rank;
    s.total_seconds = total_seconds;
    s.share = {{8, share}};
    return s;
  };
  const Site first = site("GptOssExperts", 1, 3e-3, 0.20);
  const Site second = site("GptOssRMSNorm", 2, 2e-3, 0.30);
  outcome.profile.sites = {second, first};  // not in rank order
  const std::string text = SummaryText(outcome);
  const auto a = text.find("GptOssExperts");
  const auto b = text.find("GptOssRMSNorm");
  ASSERT_NE(a, std::string::npos) << text;
  ASSERT_NE(b, std::string::npos) << text;
  EXPECT_LT(a, b) << text;
  EXPECT_NE(text.find("time/step"), std::string::npos) << text;
  EXPECT_NE(text.find("summed over batch sizes 1, 8"), std::string::npos) << text;
  EXPECT_NE(text.find("3 ms"), std::string::npos) << text;
}

}  // namespace
}  // namespace kforge::e2e
