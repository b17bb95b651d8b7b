// The one rule for which candidate of a task is its best and whether a task is solved. The
// synthesis loop (the kernel it writes to best/ and prints), a bench's live line and summary,
// `kforge report` and `kforge compare` all rank with it, so they name the same kernel.
//
// - A task is solved when one of its candidates' evaluations is `correct`.
// - Best: correct beats not correct; a correct candidate whose timing is held for review (a hold
//   doubts the measured time, not the result) ranks below every other correct one; between two
//   correct candidates of equal standing that were both timed, the lower median wins; otherwise
//   the earlier candidate (lower sample, then lower iteration) stays, so a later equal never
//   replaces the best and the choice does not depend on which sample finished first.
#ifndef KFORGE_STORE_RANKING_H_
#define KFORGE_STORE_RANKING_H_

#include <cstdint>
#include <optional>

namespace kforge::store {

// What the rule reads of one evaluated candidate.
struct Standing {
  bool correct = false;            // its evaluation's status is `correct`
  bool held_for_review = false;    // its timing is held for a person's review
  std::optional<double> median_s;  // its timing's median, when timed
  std::int64_t sample = 0;
  std::int64_t iteration = 0;  // as stored (0-based)
};

// True when `challenger` should replace `incumbent` as the best candidate.
bool IsBetter(const Standing& challenger, const Standing& incumbent);

}  // namespace kforge::store

#endif  // KFORGE_STORE_RANKING_H_
