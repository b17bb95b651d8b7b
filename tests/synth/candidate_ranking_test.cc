// The best-kept rule: correct beats not correct; between timed correct candidates the lower median
// wins; between equals, the earlier candidate stays.
#include "kforge/synth/candidate_ranking.h"

#include <gtest/gtest.h>

namespace kforge::synth {
namespace {

EvaluatedCandidate Make(EvalStatus status, int sample, int iteration) {
  EvaluatedCandidate c;
  c.sample = sample;
  c.iteration = iteration;
  c.verdict.status = status;
  return c;
}

TEST(CandidateRankingTest, CorrectBeatsAnyFailure) {
  EXPECT_TRUE(IsBetter(Make(EvalStatus::kCorrect, 1, 4), Make(EvalStatus::kMismatch, 0, 0)));
  EXPECT_FALSE(IsBetter(Make(EvalStatus::kCompileError, 0, 0), Make(EvalStatus::kCorrect, 1, 4)));
}

TEST(CandidateRankingTest, ALaterEqualCandidateNeverReplacesTheBest) {
  EXPECT_FALSE(IsBetter(Make(EvalStatus::kCorrect, 0, 3), Make(EvalStatus::kCorrect, 0, 1)));
  EXPECT_FALSE(IsBetter(Make(EvalStatus::kCorrect, 2, 0), Make(EvalStatus::kCorrect, 1, 0)));
  EXPECT_TRUE(IsBetter(Make(EvalStatus::kCorrect, 0, 1), Make(EvalStatus::kCorrect, 0, 3)));
  EXPECT_FALSE(IsBetter(Make(EvalStatus::kMismatch, 0, 2), Make(EvalStatus::kCompileError, 0, 1)));
}

EvaluatedCandidate Timed(int sample, int iteration, double median_s) {
  EvaluatedCandidate c = Make(EvalStatus::kCorrect, sample, iteration);
  TimingStats t;
  t.clock = "perf_counter";
  t.median_s = median_s;
  t.samples = 10;
  c.verdict.timing = t;
  return c;
}

TEST(CandidateRankingTest, AFasterCorrectCandidateReplacesASlowerOne) {
  EXPECT_TRUE(IsBetter(Timed(0, 3, 1e-3), Timed(0, 1, 2e-3)));   // later but faster
  EXPECT_FALSE(IsBetter(Timed(0, 3, 3e-3), Timed(0, 1, 2e-3)));  // later and slower
  EXPECT_FALSE(IsBetter(Timed(0, 1, 2e-3), Timed(0, 1, 2e-3)));  // equal: the incumbent stays
  // Without timing on one side, equal standing: the earlier candidate stays.
  EXPECT_FALSE(IsBetter(Make(EvalStatus::kCorrect, 0, 2), Timed(0, 1, 2e-3)));
  EXPECT_FALSE(IsBetter(Timed(0, 2, 1e-3), Make(EvalStatus::kCorrect, 0, 1)));
}

// One rule with the report (store/ranking.h): a timing held for review never makes a candidate
// the best over a correct one whose timing is not held, however fast it claims to be.
TEST(CandidateRankingTest, AHeldTimingNeverBeatsATrustedOne) {
  EvaluatedCandidate held = Timed(0, 3, 1e-5);
  held.verdict.held_for_review = true;
  EXPECT_FALSE(IsBetter(held, Timed(0, 1, 2e-3)));
  EXPECT_TRUE(IsBetter(Timed(0, 4, 2e-3), held));
  EXPECT_TRUE(IsBetter(held, Make(EvalStatus::kMismatch, 0, 0)));  // still correct
}

}  // namespace
}  // namespace kforge::synth
