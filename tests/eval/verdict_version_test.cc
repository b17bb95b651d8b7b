// Stored verdicts stay readable: a version-1 verdict (written by KForge before the precision
// contract, tests/eval/data/verdict_v1.json) read by Verdict::FromJson and by the reports'
// ParseVerdictSummary, and a version-2 verdict's new fields surviving a round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "kforge/eval/verdict.h"
#include "kforge/report/verdict_summary.h"

namespace kforge {
namespace {

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(KFORGE_SOURCE_HOME) + "/tests/eval/data/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(VerdictVersionTest, AVersionOneVerdictIsReadByTheLoopAndTheReports) {
  const std::string text = ReadData("verdict_v1.json");
  ASSERT_FALSE(text.empty());
  const Verdict v = Verdict::FromJson(text);
  EXPECT_EQ(v.status, EvalStatus::kCorrect);
  EXPECT_EQ(v.policy, PrecisionPolicy::kStrict);
  EXPECT_DOUBLE_EQ(v.tolerance.atol, 1e-4);
  EXPECT_EQ(v.trials.size(), 5u);
  EXPECT_EQ(v.trials[1].distribution, "normal");
  EXPECT_TRUE(v.trials[0].ok);
  EXPECT_FALSE(v.trials[0].error_ratio.has_value());  // version 1 had none
  EXPECT_TRUE(v.precision.rule.empty());
  EXPECT_TRUE(v.precision.achieved.empty());
  EXPECT_TRUE(v.skipped_trials.empty());
  ASSERT_TRUE(v.timing.has_value());
  EXPECT_GT(v.timing->median_s, 0);
  ASSERT_TRUE(v.eager_baseline.has_value());
  auto summary = report::ParseVerdictSummary(text, "verdict_v1.json");
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->status, "correct");
  EXPECT_EQ(summary->policy, "strict");
  EXPECT_TRUE(summary->precision_rule.empty());
  EXPECT_TRUE(summary->achieved_precision.empty());
  ASSERT_TRUE(summary->candidate_time.has_value());
}

TEST(VerdictVersionTest, VersionTwoFieldsSurviveARoundTrip) {
  Verdict v;
  v.status = EvalStatus::kCorrect;
  v.policy = PrecisionPolicy::kTf32;
  TrialVerdict t;
  t.index = 3;
  t.distribution = "sorted";
  t.ok = true;
  t.rule = "truth";
  t.error_ratio = 812.5;
  t.reference_error = 1.5e-7;
  t.max_abs_error = std::numeric_limits<double>::infinity();  // stored as the largest double (JSON has no infinity)
  t.meets_strict = false;
  v.trials.push_back(t);
  v.skipped_trials.push_back({"ties", "the reference returns no integer output"});
  v.precision = {"truth", "", 812.5, "tf32"};
  v.degenerate.reasons = {"constant: output 0 is the same value in every trial"};
  const std::string text = v.ToJson();
  EXPECT_NE(text.find("\"verdict_version\": 2"), std::string::npos);
  const Verdict back = Verdict::FromJson(text);
  ASSERT_EQ(back.trials.size(), 1u);
  EXPECT_EQ(back.trials[0].distribution, "sorted");
  EXPECT_EQ(back.trials[0].rule, "truth");
  EXPECT_DOUBLE_EQ(*back.trials[0].error_ratio, 812.5);
  EXPECT_DOUBLE_EQ(*back.trials[0].reference_error, 1.5e-7);
  EXPECT_GT(back.trials[0].max_abs_error, 1e300);
  EXPECT_FALSE(back.trials[0].meets_strict);
  ASSERT_EQ(back.skipped_trials.size(), 1u);
  EXPECT_EQ(back.skipped_trials[0].distribution, "ties");
  EXPECT_EQ(back.precision.rule, "truth");
  EXPECT_EQ(back.precision.achieved, "tf32");
  EXPECT_DOUBLE_EQ(*back.precision.worst_error_ratio, 812.5);
  EXPECT_EQ(back.degenerate.reasons, v.degenerate.reasons);
  auto summary = report::ParseVerdictSummary(text, "v2");
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->achieved_precision, "tf32");
  EXPECT_EQ(summary->precision_rule, "truth");
  EXPECT_DOUBLE_EQ(*summary->worst_error_ratio, 812.5);
}

}  // namespace
}  // namespace kforge
