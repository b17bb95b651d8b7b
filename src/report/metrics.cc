#include "kforge/report/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "kforge/store/ranking.h"
#include "kforge/task/task.h"

namespace kforge::report {

std::string_view BaselineName(Baseline baseline) {
  switch (baseline) {
    case Baseline::kEager: return "eager";
    case Baseline::kCompile: return "compile";
    case Baseline::kBest: return "best";
  }
  return "?";
}

std::string_view BaselineDescription(Baseline baseline) {
  switch (baseline) {
    case Baseline::kEager:
      return "PyTorch eager: the reference Model's forward, timed by the same code on the same "
             "device in the same evaluation; speedup = eager median / candidate median "
             "(timing.speedup_vs_eager)";
    case Baseline::kCompile:
      return "torch.compile of the reference, timed the same way; speedup as stored in "
             "timing.speedup_vs_compile";
    case Baseline::kBest:
      return "the faster of eager and torch.compile; speedup as stored in "
             "timing.speedup_vs_best_baseline";
  }
  return "?";
}

std::string_view TaskClassName(TaskClass c) {
  switch (c) {
    case TaskClass::kHeadline: return "headline";
    case TaskClass::kDegenerate: return "degenerate";
    case TaskClass::kHeld: return "held_for_review";
  }
  return "?";
}

std::string PrecisionKey::Describe() const {
  auto number = [](const std::optional<double>& v) {
    return v ? fmt::format("{:g}", *v) : std::string("not stated");
  };
  return fmt::format("{} (atol {}, rtol {})", policy, number(atol), number(rtol));
}

namespace {

std::optional<double> StoredSpeedup(const VerdictSummary& v, Baseline baseline) {
  switch (baseline) {
    case Baseline::kEager: return v.speedup_vs_eager;
    case Baseline::kCompile: return v.speedup_vs_compile;
    case Baseline::kBest: return v.speedup_vs_best_baseline;
  }
  return std::nullopt;
}

bool IsMeasurement(double x) { return std::isfinite(x) && x > 0; }

constexpr std::size_t Index(Baseline b) { return static_cast<std::size_t>(b); }

std::optional<double> Median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

DistributionSummary Summarize(const std::vector<double>& v) {
  DistributionSummary d;
  d.n = static_cast<int>(v.size());
  if (v.empty()) return d;
  d.min = *std::min_element(v.begin(), v.end());
  d.max = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  d.mean = sum / static_cast<double>(v.size());
  d.median = Median(v);
  return d;
}

// What the one ranking rule reads of a candidate (its latest evaluation).
store::Standing StandingOf(const CandidateData& c) {
  return store::Standing{
      .correct = c.evaluation && c.evaluation->status == store::EvaluationStatus::kCorrect,
      .held_for_review = c.verdict.held_for_review,
      .median_s = c.verdict.candidate_time ? std::optional<double>(c.verdict.candidate_time->median_s)
                                           : std::nullopt,
      .sample = c.record.sample,
      .iteration = c.record.iteration};
}

TaskOutcome Outcome(const TaskData& task, std::size_t index, std::int64_t max_iteration) {
  TaskOutcome o;
  o.name = task.record.name;
  o.task_index = index;
  o.arithmetic_intensity = task.arithmetic_intensity;
  o.input_tokens = task.input_tokens;
  o.output_tokens = task.output_tokens;
  o.cost_usd = task.cost_usd;
  o.candidates = static_cast<int>(task.candidates.size());
  // Until a verdict states them, the task's policy and the tolerance that policy implies.
  o.precision.policy = task.policy.empty() ? "unknown" : task.policy;
  if (auto policy = ParsePrecisionPolicy(task.policy); policy) {
    const Tolerance tolerance = ToleranceOf(*policy);
    o.precision.atol = tolerance.atol;
    o.precision.rtol = tolerance.rtol;
  }
  bool precision_from_verdict = false;
  bool degenerate = false;
  const std::size_t iterations = max_iteration < 0 ? 0 : static_cast<std::size_t>(max_iteration + 1);
  o.best_so_far.assign(iterations, std::nullopt);
  o.correct_so_far.assign(iterations, false);
  const CandidateData* last_evaluated = nullptr;
  // Correct candidates by iteration, for the best of the task and the best by each iteration.
  std::vector<std::vector<const CandidateData*>> correct_at(iterations);

  for (const CandidateData& c : task.candidates) {
    if (!c.evaluation) continue;
    ++o.evaluated;
    last_evaluated = &c;
    const VerdictSummary& v = c.verdict;
    if (!precision_from_verdict && !v.policy.empty()) {
      o.precision = PrecisionKey{v.policy, v.atol, v.rtol};
      precision_from_verdict = true;
    }
    if (v.degenerate) {
      degenerate = true;
      if (o.degenerate_flags.empty()) o.degenerate_flags = v.degenerate_flags;
    }
    for (Baseline b : kBaselines) {
      if (auto s = StoredSpeedup(v, b); s && !IsMeasurement(*s)) ++o.invalid_speedups;
    }
    if (v.held_for_review) {
      o.held.push_back(HeldCandidate{c.record.id, c.record.sample, c.record.iteration,
                                     SpeedupOf(v, Baseline::kEager), v.review_reason});
    }
    if (c.evaluation->status != store::EvaluationStatus::kCorrect) continue;
    ++o.correct_candidates;
    const std::size_t at = c.record.iteration < 0 ? 0 : static_cast<std::size_t>(c.record.iteration);
    if (at < iterations) correct_at[at].push_back(&c);
  }
  // The best candidate by the one rule (store/ranking.h), as it stood after each iteration.
  const CandidateData* best = nullptr;
  for (std::size_t i = 0; i < iterations; ++i) {
    for (const CandidateData* c : correct_at[i]) {
      if (best == nullptr || store::IsBetter(StandingOf(*c), StandingOf(*best))) best = c;
    }
    o.correct_so_far[i] = best != nullptr;
    if (best != nullptr && !best->verdict.held_for_review) {
      o.best_so_far[i] = SpeedupOf(best->verdict, Baseline::kEager);
    }
  }
  if (best != nullptr) {
    o.correct = true;
    o.best_id = best->record.id;
    for (Baseline b : kBaselines) {
      o.best_speedup[Index(b)] = SpeedupOf(best->verdict, b);
      if (o.best_speedup[Index(b)]) o.best_candidate_id[Index(b)] = best->record.id;
    }
    if (auto sol = best->verdict.sol_fraction; sol && std::isfinite(*sol) && *sol >= 0 && *sol <= 1) {
      o.best_sol_fraction = sol;
    }
    o.best_achieved_precision = best->verdict.achieved_precision;
  }
  if (o.correct) {
    o.status = "correct";
  } else if (last_evaluated != nullptr) {
    o.status = std::string(store::ToString(last_evaluated->evaluation->status));
  } else {
    o.status = task.candidates.empty() ? "no candidates" : "not evaluated";
  }
  if (degenerate) {
    o.task_class = TaskClass::kDegenerate;
  } else if (!o.held.empty()) {
    o.task_class = TaskClass::kHeld;
  }
  return o;
}

GroupMetrics Group(TaskClass task_class, const PrecisionKey& key,
                   const std::vector<const TaskOutcome*>& tasks, std::int64_t max_iteration) {
  GroupMetrics g;
  g.precision = key;
  g.task_class = task_class;
  g.tasks = static_cast<int>(tasks.size());
  std::vector<double> sols;
  for (const TaskOutcome* t : tasks) {
    if (t->correct) ++g.correct;
    if (t->best_sol_fraction) sols.push_back(*t->best_sol_fraction);
    g.input_tokens += t->input_tokens;
    g.output_tokens += t->output_tokens;
    g.cost_usd += t->cost_usd;
  }
  if (g.tasks > 0) g.correctness_rate = static_cast<double>(g.correct) / g.tasks;
  for (Baseline b : kBaselines) {
    BaselineMetrics& m = g.baselines[Index(b)];
    std::vector<double> speedups;
    for (const TaskOutcome* t : tasks) {
      if (auto s = t->best_speedup[Index(b)]) {
        speedups.push_back(*s);
      } else if (t->correct) {
        ++m.correct_without_speedup;
      }
    }
    m.measured = static_cast<int>(speedups.size());
    m.geomean_speedup = GeometricMean(speedups);
    for (std::size_t k = 0; k < kFastPThresholds.size(); ++k) {
      m.fast_p[k] = FastP(tasks, b, kFastPThresholds[k]);
    }
  }
  g.sol_fraction = Summarize(sols);
  for (std::int64_t i = 0; i <= max_iteration && g.tasks > 0; ++i) {
    IterationPoint p;
    p.iteration = i;
    int correct = 0, fast = 0;
    std::vector<double> best;
    for (const TaskOutcome* t : tasks) {
      const auto k = static_cast<std::size_t>(i);
      if (t->correct_so_far[k]) ++correct;
      if (const auto& s = t->best_so_far[k]) {
        best.push_back(*s);
        if (*s > 1.0) ++fast;
      }
    }
    p.correct_rate = static_cast<double>(correct) / g.tasks;
    p.fast_1 = static_cast<double>(fast) / g.tasks;
    p.geomean_best = GeometricMean(best);
    p.measured = static_cast<int>(best.size());
    g.iterations.push_back(p);
  }
  return g;
}

}  // namespace

std::optional<double> SpeedupOf(const VerdictSummary& verdict, Baseline baseline) {
  auto s = StoredSpeedup(verdict, baseline);
  if (!s || !IsMeasurement(*s)) return std::nullopt;
  return s;
}

std::optional<double> GeometricMean(const std::vector<double>& values) {
  double log_sum = 0;
  int n = 0;
  for (double v : values) {
    if (!IsMeasurement(v)) continue;
    log_sum += std::log(v);
    ++n;
  }
  if (n == 0) return std::nullopt;
  return std::exp(log_sum / n);
}

std::optional<double> FastP(const std::vector<const TaskOutcome*>& tasks, Baseline baseline,
                            double p) {
  if (tasks.empty()) return std::nullopt;
  int fast = 0;
  for (const TaskOutcome* t : tasks) {
    const auto& s = t->best_speedup[Index(baseline)];
    if (t->correct && s && *s > p) ++fast;
  }
  return static_cast<double>(fast) / static_cast<double>(tasks.size());
}

RunMetrics ComputeMetrics(const RunData& run) {
  RunMetrics m;
  for (const TaskData& t : run.tasks) {
    for (const CandidateData& c : t.candidates) {
      m.max_iteration = std::max(m.max_iteration, c.record.iteration);
    }
  }
  m.tasks.reserve(run.tasks.size());
  for (std::size_t i = 0; i < run.tasks.size(); ++i) {
    m.tasks.push_back(Outcome(run.tasks[i], i, m.max_iteration));
  }
  std::map<std::tuple<TaskClass, PrecisionKey>, std::vector<const TaskOutcome*>> groups;
  for (const TaskOutcome& t : m.tasks) {
    groups[{t.task_class, t.precision}].push_back(&t);
    switch (t.task_class) {
      case TaskClass::kHeadline: ++m.headline_tasks; break;
      case TaskClass::kDegenerate: ++m.degenerate_tasks; break;
      case TaskClass::kHeld: ++m.held_tasks; break;
    }
  }
  for (const auto& [key, tasks] : groups) {
    m.groups.push_back(Group(std::get<0>(key), std::get<1>(key), tasks, m.max_iteration));
  }
  if (!run.tasks.empty()) {
    const double n = static_cast<double>(run.tasks.size());
    m.cost_per_task_usd = run.cost_usd / n;
    m.tokens_per_task = static_cast<double>(run.input_tokens + run.output_tokens) / n;
  }
  return m;
}

}  // namespace kforge::report
