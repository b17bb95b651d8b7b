#include "kforge/store/ranking.h"

#include <tuple>

namespace kforge::store {
namespace {

// 2: correct, 1: correct but held for review, 0: not correct.
int Rank(const Standing& s) { return s.correct ? (s.held_for_review ? 1 : 2) : 0; }

}  // namespace

bool IsBetter(const Standing& challenger, const Standing& incumbent) {
  if (Rank(challenger) != Rank(incumbent)) return Rank(challenger) > Rank(incumbent);
  if (challenger.correct && challenger.median_s && incumbent.median_s &&
      *challenger.median_s != *incumbent.median_s) {
    return *challenger.median_s < *incumbent.median_s;
  }
  return std::tie(challenger.sample, challenger.iteration) <
         std::tie(incumbent.sample, incumbent.iteration);
}

}  // namespace kforge::store
