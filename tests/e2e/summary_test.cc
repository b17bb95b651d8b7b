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

}  // namespace
}  // namespace kforge::e2e
