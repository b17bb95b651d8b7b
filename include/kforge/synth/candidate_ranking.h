// Which of two evaluated candidates is better: the loop keeps its best candidate by it, so that a
// later, worse candidate never replaces it. It is the one rule of store/ranking.h (also used by
// bench summaries, reports and `kforge compare`): correct beats not correct, a candidate held for
// review ranks below the other correct ones, between timed correct candidates the lower median
// wins, and between equals the earlier one (lower sample, then lower iteration) stays.
#ifndef KFORGE_SYNTH_CANDIDATE_RANKING_H_
#define KFORGE_SYNTH_CANDIDATE_RANKING_H_

#include <cstdint>
#include <filesystem>
#include <string>

#include "kforge/eval/verdict.h"
#include "kforge/store/ranking.h"

namespace kforge::synth {

// One evaluated candidate as the loop keeps it.
struct EvaluatedCandidate {
  std::string candidate_id;
  std::string file_name;  // "kernel.cpp"
  std::string source;
  std::filesystem::path path;  // the file the evaluator read, inside the run directory
  std::int64_t sample = 0;
  std::int64_t iteration = 0;
  Verdict verdict;

  bool correct() const { return verdict.status == EvalStatus::kCorrect; }
};

// What the rule of store/ranking.h reads of `candidate`.
store::Standing StandingOf(const EvaluatedCandidate& candidate);

// True when `challenger` should replace `incumbent` as the best candidate.
bool IsBetter(const EvaluatedCandidate& challenger, const EvaluatedCandidate& incumbent);

}  // namespace kforge::synth

#endif  // KFORGE_SYNTH_CANDIDATE_RANKING_H_
