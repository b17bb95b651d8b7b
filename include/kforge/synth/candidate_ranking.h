// Which of two evaluated candidates is better: the one rule the loop uses to keep its best
// candidate, so that a later, worse candidate never replaces it.
//
// The evaluation's own rule decides first (kforge::IsBetter in eval/verdict.h): correct beats not
// correct, and between two correct candidates that were both timed the lower median time wins.
// Between candidates of equal standing the earlier one (lower sample, then lower iteration) stays,
// so the choice does not depend on which sample finished first.
#ifndef KFORGE_SYNTH_CANDIDATE_RANKING_H_
#define KFORGE_SYNTH_CANDIDATE_RANKING_H_

#include <cstdint>
#include <filesystem>
#include <string>

#include "kforge/eval/verdict.h"

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

// True when `challenger` should replace `incumbent` as the best candidate.
bool IsBetter(const EvaluatedCandidate& challenger, const EvaluatedCandidate& incumbent);

}  // namespace kforge::synth

#endif  // KFORGE_SYNTH_CANDIDATE_RANKING_H_
