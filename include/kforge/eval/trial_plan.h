// The trial plan of one evaluation (EVAL-PROTOCOL correctness rule 2): which input sets the
// reference phase draws, from which secret seeds, and what each is for.
//
// Trials of the task's own distributions come first (trial 1 redraws floating inputs from N(0,1),
// trial 3 from U(-1,1), the others keep the task's draw; trials 0 and 1 have the same shapes, which
// the address probe needs), then the shortcut-finding trials (kforge_runner/trial_inputs.py:
// scaled, negative, dominant, sorted, ties, shape), then the timing sets: input sets drawn like the
// trials (task, normal, task, ...) that the timing rotates among and that are never shown as trials.
// The reference phase skips a shortcut trial that does not apply to the task or on which the
// reference is not well defined, and says why (ReferenceResult::skipped).
#ifndef KFORGE_EVAL_TRIAL_PLAN_H_
#define KFORGE_EVAL_TRIAL_PLAN_H_

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

enum class TrialPurpose { kTrial, kTiming };
std::string_view TrialPurposeName(TrialPurpose purpose);  // "trial", "timing"

struct PlannedTrial {
  std::uint64_t seed = 0;
  std::string distribution;  // task, normal, uniform, scaled, negative, dominant, sorted, ties, shape
  TrialPurpose purpose = TrialPurpose::kTrial;
};

struct TrialPlanOptions {
  int task_trials = 5;          // of the task's own distributions; at least 2
  bool shortcut_trials = true;  // the six shortcut-finding trials after them
  int timing_sets = 0;          // input sets for timing only
};

// The shortcut-finding distributions, in plan order.
const std::vector<std::string>& ShortcutDistributions();

// The plan; each seed is `seeds() >> 1` (JSON-safe), drawn in plan order.
std::vector<PlannedTrial> PlanTrials(const TrialPlanOptions& options, std::mt19937_64& seeds);

}  // namespace kforge

#endif  // KFORGE_EVAL_TRIAL_PLAN_H_
