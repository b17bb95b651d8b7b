// The figures of a run: correctness, fast_p, geometric-mean speedups, speed-of-light fractions,
// cost and tokens per task, and improvement per iteration. docs/report.md defines each one and
// its edge cases; this header states the rules in brief.
//
// - A task's outcome comes from its candidates' latest evaluations. A candidate counts as correct
//   when its evaluation status is `correct`; a task is solved when one of its candidates is. Its
//   best candidate is chosen by the one rule of store/ranking.h, as the synthesis loop chooses the
//   kernel it writes to best/: a candidate held for review (`timing.held_for_review`) is the
//   best only when every correct candidate is held.
// - Headline figures are computed per precision group (policy, atol, rtol): results under
//   different policies are never pooled. Degenerate tasks (any verdict with
//   `degenerate.flagged`) and tasks with a candidate held for review leave the headline and are
//   reported apart, degenerate first.
// - A task's speedup against a baseline is its best candidate's, taken as stored in the verdict
//   (baseline median / candidate median, same device, same run). A speedup that is absent, not
//   finite or not positive is not a measurement: such a task is "correct without a measured
//   speedup" for that baseline.
// - fast_p (KernelBench): (tasks whose best candidate is correct and has speedup > p) / (all
//   tasks of the group), strictly greater, every task of the group in the denominator, whether or
//   not it produced anything. Undefined (nullopt) for an empty group.
// - Geometric-mean speedup: over the tasks of the group with a measured speedup; nullopt when none.
#ifndef KFORGE_REPORT_METRICS_H_
#define KFORGE_REPORT_METRICS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/report/run_data.h"

namespace kforge::report {

// Baselines a speedup can be measured against.
enum class Baseline { kEager, kCompile, kBest };
inline constexpr std::array<Baseline, 3> kBaselines = {Baseline::kEager, Baseline::kCompile,
                                                       Baseline::kBest};
// "eager", "compile", "best"
std::string_view BaselineName(Baseline baseline);
// One sentence: what the baseline is and how the speedup against it is formed.
std::string_view BaselineDescription(Baseline baseline);

// The thresholds p of fast_p.
inline constexpr std::array<double, 6> kFastPThresholds = {0.0, 0.5, 0.8, 1.0, 1.5, 2.0};

// The speedup of `verdict` against `baseline` when it is a measurement (finite and > 0).
std::optional<double> SpeedupOf(const VerdictSummary& verdict, Baseline baseline);

// Where a task ends up in a report.
enum class TaskClass {
  kHeadline,    // in its precision group's headline figures
  kDegenerate,  // its reference cannot tell right from wrong: reported apart
  kHeld,        // a candidate is held for review: reported apart until someone looks
};
std::string_view TaskClassName(TaskClass c);  // "headline", "degenerate", "held_for_review"

// A precision group: results under one policy and tolerance.
struct PrecisionKey {
  std::string policy;  // "strict", "tf32", "mixed"; "unknown" when nothing says
  std::optional<double> atol;
  std::optional<double> rtol;

  auto operator<=>(const PrecisionKey&) const = default;
  bool operator==(const PrecisionKey&) const = default;
  std::string Describe() const;  // "strict (atol 0.0001, rtol 0.0001)"
};

struct HeldCandidate {
  std::string candidate_id;
  std::int64_t sample = 0;
  std::int64_t iteration = 0;
  std::optional<double> speedup_vs_eager;
  std::string reason;
};

struct TaskOutcome {
  std::string name;
  std::size_t task_index = 0;  // into RunData::tasks
  TaskClass task_class = TaskClass::kHeadline;
  PrecisionKey precision;
  std::string degenerate_flags;  // for degenerate tasks
  int candidates = 0;
  int evaluated = 0;
  int correct_candidates = 0;  // correct, held ones included
  bool correct = false;        // solved: a correct candidate exists (held for review or not)
  // "correct", or the status of the last evaluated candidate, or "not evaluated".
  std::string status;
  // The best candidate's speedup per baseline (kBaselines order), and its id where measured.
  std::array<std::optional<double>, 3> best_speedup;
  std::array<std::string, 3> best_candidate_id;
  int invalid_speedups = 0;  // stored speedups that were zero, negative or not finite
  // The task's best candidate (store/ranking.h); empty when none is correct.
  std::string best_id;
  std::optional<double> best_sol_fraction;
  // The precision the best candidate's outputs met (verdict version 2): "strict", or the policy
  // ("tf32", "mixed") when its speedup came from lower precision, kept apart from same-precision
  // results; "" when unknown (version 1) or none is correct.
  std::string best_achieved_precision;
  std::optional<double> arithmetic_intensity;
  std::vector<HeldCandidate> held;
  // The speedup against eager of the best candidate as it stood after each iteration 0..max
  // (index = stored iteration; none while that best is held for review), and whether a correct
  // candidate existed by then.
  std::vector<std::optional<double>> best_so_far;
  std::vector<bool> correct_so_far;
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  double cost_usd = 0;
};

struct BaselineMetrics {
  int measured = 0;                 // correct tasks with a measured speedup
  int correct_without_speedup = 0;  // correct tasks with none against this baseline
  std::optional<double> geomean_speedup;
  std::array<std::optional<double>, kFastPThresholds.size()> fast_p;
};

struct DistributionSummary {
  int n = 0;
  std::optional<double> min, median, mean, max;
};

struct IterationPoint {
  std::int64_t iteration = 0;
  double correct_rate = 0;             // tasks with a correct candidate by then / tasks
  std::optional<double> fast_1;        // fast_1 against eager by then
  std::optional<double> geomean_best;  // of the best-so-far speedups that exist by then
  int measured = 0;                    // tasks with a best-so-far speedup by then
};

struct GroupMetrics {
  PrecisionKey precision;
  TaskClass task_class = TaskClass::kHeadline;
  int tasks = 0;
  int correct = 0;
  std::optional<double> correctness_rate;
  std::array<BaselineMetrics, 3> baselines;  // kBaselines order
  DistributionSummary sol_fraction;          // over the best candidates that state one
  std::vector<IterationPoint> iterations;
  std::int64_t input_tokens = 0;  // attributed to the group's tasks
  std::int64_t output_tokens = 0;
  double cost_usd = 0;
};

struct RunMetrics {
  std::vector<TaskOutcome> tasks;    // RunData::tasks order
  std::vector<GroupMetrics> groups;  // headline groups, then degenerate, then held; by policy
  int headline_tasks = 0;
  int degenerate_tasks = 0;
  int held_tasks = 0;
  std::int64_t max_iteration = -1;
  // Cost and tokens of the whole run (every LLM call), per task = total / tasks.
  std::optional<double> cost_per_task_usd;
  std::optional<double> tokens_per_task;
};

// The per-task outcomes and the group figures of `run`.
RunMetrics ComputeMetrics(const RunData& run);

// Geometric mean of the finite, positive values of `values`; nullopt when there are none.
std::optional<double> GeometricMean(const std::vector<double>& values);

// KernelBench's fast_p: among `tasks` outcomes, the share (of all of them) that are correct with
// a speedup against `baseline` strictly greater than `p`; nullopt for no tasks.
std::optional<double> FastP(const std::vector<const TaskOutcome*>& tasks, Baseline baseline,
                            double p);

}  // namespace kforge::report

#endif  // KFORGE_REPORT_METRICS_H_
