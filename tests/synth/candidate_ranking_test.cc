// The best-kept rule: correct beats not correct; between equals, the earlier candidate stays.
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

}  // namespace
}  // namespace kforge::synth
