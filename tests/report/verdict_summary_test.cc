#include "kforge/report/verdict_summary.h"

#include <gtest/gtest.h>

#include "store_builder.h"

namespace kforge::report {
namespace {

TEST(VerdictSummary, ReadsVersionOneVerdicts) {
  testing::VerdictSpec spec;
  spec.candidate_median_s = 0.5e-3;
  spec.eager_median_s = 1e-3;
  spec.speedup_vs_eager = 2.0;
  spec.message = "ok <b>";
  auto v = ParseVerdictSummary(testing::VerdictJson(spec), "evl-1");
  ASSERT_TRUE(v.has_value()) << v.error().message;
  EXPECT_EQ(v->status, "correct");
  EXPECT_EQ(v->message, "ok <b>");
  EXPECT_EQ(v->policy, "strict");
  EXPECT_DOUBLE_EQ(*v->atol, 1e-4);
  EXPECT_TRUE(v->timed);
  ASSERT_TRUE(v->candidate_time.has_value());
  EXPECT_DOUBLE_EQ(v->candidate_time->median_s, 0.5e-3);
  EXPECT_EQ(v->candidate_time->clock, "perf_counter");
  EXPECT_EQ(v->candidate_time->samples, 120);
  EXPECT_DOUBLE_EQ(*v->speedup_vs_eager, 2.0);
  // The timing fields (cold protocol, baselines, floor) are absent, so not measured.
  EXPECT_FALSE(v->compile_baseline.has_value());
  EXPECT_FALSE(v->speedup_vs_compile.has_value());
  EXPECT_FALSE(v->sol_fraction.has_value());
  EXPECT_FALSE(v->held_for_review);
}

TEST(VerdictSummary, ReadsTheNewTimingFields) {
  const char* json = R"({"status":"correct","precision":{"policy":"tf32","atol":0.001,"rtol":0.001},
    "degenerate":{"flagged":true,"all_zero":false,"constant":true,"constant_passes":false,
                  "nondeterministic":true},
    "guardrail_flags":["line 1: [hardcoded-shape] x","line 2: [hardcoded-shape] y"],
    "timing":{"candidate":{"median_s":1e-4,"clock":"events-warm","rel_std":0.002,"samples":50},
      "eager_baseline":{"median_s":3e-4},"compile_baseline":{"median_s":2e-4},
      "compile_max_autotune_baseline":null,"speedup_vs_eager":3,"speedup_vs_compile":2.0,
      "speedup_vs_best_baseline":2.0,"sol_fraction":0.61,"held_for_review":true,
      "review_reason":"above 10x"}})";
  auto v = ParseVerdictSummary(json, "evl-2");
  ASSERT_TRUE(v.has_value()) << v.error().message;
  EXPECT_EQ(v->policy, "tf32");
  EXPECT_TRUE(v->degenerate);
  EXPECT_EQ(v->degenerate_flags, "constant, nondeterministic");
  EXPECT_EQ(v->guardrail_flags, 2);
  EXPECT_DOUBLE_EQ(*v->speedup_vs_eager, 3.0);  // an integer is a number too
  EXPECT_DOUBLE_EQ(v->compile_baseline->median_s, 2e-4);
  EXPECT_FALSE(v->compile_max_autotune_baseline.has_value());
  EXPECT_DOUBLE_EQ(*v->sol_fraction, 0.61);
  EXPECT_TRUE(v->held_for_review);
  EXPECT_EQ(v->review_reason, "above 10x");
}

TEST(VerdictSummary, WrongTypesAreAbsentAndNonObjectsAreErrors) {
  auto v = ParseVerdictSummary(
      R"({"status":"correct","precision":"strict","timing":{"speedup_vs_eager":"fast","candidate":7}})",
      "evl-3");
  ASSERT_TRUE(v.has_value()) << v.error().message;
  EXPECT_TRUE(v->policy.empty());
  EXPECT_FALSE(v->speedup_vs_eager.has_value());
  EXPECT_FALSE(v->candidate_time.has_value());
  auto timing_null = ParseVerdictSummary(R"({"status":"mismatch","timing":null})", "evl-4");
  ASSERT_TRUE(timing_null.has_value());
  EXPECT_FALSE(timing_null->timed);
  auto array = ParseVerdictSummary("[1,2]", "evl-5");
  ASSERT_FALSE(array.has_value());
  EXPECT_NE(array.error().message.find("evl-5"), std::string::npos);
  EXPECT_FALSE(ParseVerdictSummary("{\"status\":", "evl-6").has_value());
}

}  // namespace
}  // namespace kforge::report
