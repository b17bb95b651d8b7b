#include "kforge/synth/candidate_ranking.h"

#include "kforge/store/ranking.h"

namespace kforge::synth {

store::Standing StandingOf(const EvaluatedCandidate& c) {
  return store::Standing{.correct = c.correct(),
                         .held_for_review = c.verdict.held_for_review,
                         .median_s = c.verdict.timing ? std::optional<double>(c.verdict.timing->median_s)
                                                      : std::nullopt,
                         .sample = c.sample,
                         .iteration = c.iteration};
}

bool IsBetter(const EvaluatedCandidate& challenger, const EvaluatedCandidate& incumbent) {
  return store::IsBetter(StandingOf(challenger), StandingOf(incumbent));
}

}  // namespace kforge::synth
