#include "kforge/synth/candidate_ranking.h"

#include <tuple>

namespace kforge::synth {

bool IsBetter(const EvaluatedCandidate& challenger, const EvaluatedCandidate& incumbent) {
  if (kforge::IsBetter(challenger.verdict, incumbent.verdict)) return true;
  if (kforge::IsBetter(incumbent.verdict, challenger.verdict)) return false;
  // Equal standing: the earlier candidate stays, so the choice does not depend on which sample
  // finished first.
  return std::tie(challenger.sample, challenger.iteration) <
         std::tie(incumbent.sample, incumbent.iteration);
}

}  // namespace kforge::synth
