#include "kforge/eval/trial_plan.h"

#include <algorithm>

namespace kforge {

std::string_view TrialPurposeName(TrialPurpose purpose) {
  return purpose == TrialPurpose::kTiming ? "timing" : "trial";
}

const std::vector<std::string>& ShortcutDistributions() {
  static const std::vector<std::string> kNames = {"scaled", "negative", "dominant",
                                                  "sorted", "ties",     "shape"};
  return kNames;
}

std::vector<PlannedTrial> PlanTrials(const TrialPlanOptions& options, std::mt19937_64& seeds) {
  std::vector<PlannedTrial> plan;
  const int task_trials = std::max(options.task_trials, 2);
  for (int k = 0; k < task_trials; ++k) {
    plan.push_back({seeds() >> 1, k == 1 ? "normal" : k == 3 ? "uniform" : "task",
                    TrialPurpose::kTrial});
  }
  if (options.shortcut_trials) {
    for (const auto& d : ShortcutDistributions()) {
      plan.push_back({seeds() >> 1, d, TrialPurpose::kTrial});
    }
  }
  for (int j = 0; j < options.timing_sets; ++j) {
    plan.push_back({seeds() >> 1, j % 2 == 1 ? "normal" : "task", TrialPurpose::kTiming});
  }
  return plan;
}

}  // namespace kforge
