#include "kforge/synth/candidate_ranking.h"

#include <tuple>

namespace kforge::synth {

bool IsBetter(const EvaluatedCandidate& challenger, const EvaluatedCandidate& incumbent) {
  if (challenger.correct() != incumbent.correct()) return challenger.correct();
  // Equal standing: the earlier candidate stays, so the choice does not depend on which sample
  // finished first.
  return std::tie(challenger.sample, challenger.iteration) <
         std::tie(incumbent.sample, incumbent.iteration);
}

}  // namespace kforge::synth
