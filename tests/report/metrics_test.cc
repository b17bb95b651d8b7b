#include "kforge/report/metrics.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "kforge/report/run_data.h"
#include "scratch_dir.h"
#include "store_builder.h"

namespace kforge::report {
namespace {

using testing::ScratchDir;
using testing::StoreBuilder;
using testing::VerdictSpec;

constexpr std::size_t kEager = 0, kCompile = 1, kBest = 2;
// Index of p in kFastPThresholds.
std::size_t P(double p) {
  for (std::size_t i = 0; i < kFastPThresholds.size(); ++i) {
    if (kFastPThresholds[i] == p) return i;
  }
  ADD_FAILURE() << "no threshold " << p;
  return 0;
}

VerdictSpec Correct(double speedup) {
  VerdictSpec v;
  v.candidate_median_s = 1e-3 / speedup;
  v.eager_median_s = 1e-3;
  v.speedup_vs_eager = speedup;
  return v;
}
VerdictSpec Failed(const std::string& status) {
  VerdictSpec v;
  v.status = status;
  v.timed = false;
  return v;
}

struct Loaded {
  RunData data;
  RunMetrics metrics;
};

Loaded Load(const std::filesystem::path& dir) {
  auto opened = OpenRunForReading(dir, "");
  EXPECT_TRUE(opened.has_value()) << opened.error().message;
  auto data = LoadRunData(*opened, 2);
  EXPECT_TRUE(data.has_value()) << data.error().message;
  auto metrics = ComputeMetrics(*data);
  return {std::move(*data), std::move(metrics)};
}

const GroupMetrics* FindGroup(const RunMetrics& m, TaskClass c, const std::string& policy) {
  for (const auto& g : m.groups) {
    if (g.task_class == c && g.precision.policy == policy) return &g;
  }
  return nullptr;
}

const TaskOutcome& FindTask(const RunMetrics& m, const std::string& name) {
  for (const auto& t : m.tasks) {
    if (t.name == name) return t;
  }
  throw std::runtime_error("no task " + name);
}

TEST(ReportMetrics, NoCorrectCandidates) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    auto t = b.Task("a");
    b.Evaluate(b.Candidate(t, 0, 0, "x"), Failed("compile_error"));
    b.Evaluate(b.Candidate(t, 0, 1, "y"), Failed("mismatch"));
    b.Finish();
  }
  auto [data, m] = Load(dir.path());
  const auto* g = FindGroup(m, TaskClass::kHeadline, "strict");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->tasks, 1);
  EXPECT_EQ(g->correct, 0);
  EXPECT_EQ(g->correctness_rate, 0.0);
  for (const auto& b : g->baselines) {
    EXPECT_EQ(b.measured, 0);
    EXPECT_FALSE(b.geomean_speedup.has_value());
    for (const auto& f : b.fast_p) EXPECT_EQ(f, 0.0);
  }
  const auto& t = FindTask(m, "a");
  EXPECT_FALSE(t.correct);
  EXPECT_EQ(t.status, "mismatch");  // the last evaluated candidate's
  EXPECT_TRUE(t.best_id.empty());
  ASSERT_EQ(t.best_so_far.size(), 2u);
  EXPECT_FALSE(t.best_so_far[1].has_value());
  EXPECT_FALSE(g->iterations[1].geomean_best.has_value());
}

TEST(ReportMetrics, FastPIsStrictAndCountsEveryTaskInTheDenominator) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    b.Evaluate(b.Candidate(b.Task("exactly_one"), 0, 0, "x"), Correct(1.0));
    b.Evaluate(b.Candidate(b.Task("two"), 0, 0, "x"), Correct(2.0));
    b.Evaluate(b.Candidate(b.Task("slow"), 0, 0, "x"), Correct(0.5));
    b.Evaluate(b.Candidate(b.Task("broken"), 0, 0, "x"), Failed("crashed"));
    b.Task("never_generated");
    b.Finish();
  }
  auto [data, m] = Load(dir.path());
  const auto* g = FindGroup(m, TaskClass::kHeadline, "strict");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->tasks, 5);
  EXPECT_EQ(g->correct, 3);
  const auto& e = g->baselines[kEager];
  EXPECT_DOUBLE_EQ(*e.fast_p[P(0)], 3.0 / 5);
  EXPECT_DOUBLE_EQ(*e.fast_p[P(0.5)], 2.0 / 5);  // 0.5 is not > 0.5
  EXPECT_DOUBLE_EQ(*e.fast_p[P(0.8)], 2.0 / 5);
  EXPECT_DOUBLE_EQ(*e.fast_p[P(1)], 1.0 / 5);    // 1.0 is not > 1
  EXPECT_DOUBLE_EQ(*e.fast_p[P(1.5)], 1.0 / 5);
  EXPECT_DOUBLE_EQ(*e.fast_p[P(2)], 0.0);        // 2.0 is not > 2
  EXPECT_EQ(e.measured, 3);
  EXPECT_NEAR(*e.geomean_speedup, 1.0, 1e-12);  // (1 · 2 · 0.5)^(1/3)
  EXPECT_EQ(FindTask(m, "never_generated").status, "no candidates");
}

TEST(ReportMetrics, GeometricMeanAndGuards) {
  EXPECT_NEAR(*GeometricMean({2.0, 8.0}), 4.0, 1e-12);
  EXPECT_FALSE(GeometricMean({}).has_value());
  EXPECT_FALSE(GeometricMean({0.0, -1.0, NAN, INFINITY}).has_value());
  EXPECT_NEAR(*GeometricMean({0.0, 9.0, -3.0}), 9.0, 1e-12);
  EXPECT_FALSE(FastP({}, Baseline::kEager, 1.0).has_value());
}

TEST(ReportMetrics, ZeroAndNegativeSpeedupsAreNotMeasurements) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    auto t = b.Task("guarded");
    VerdictSpec zero = Correct(1.0);
    zero.speedup_vs_eager = 0.0;
    VerdictSpec negative = Correct(1.0);
    negative.speedup_vs_eager = -2.0;
    b.Evaluate(b.Candidate(t, 0, 0, "a"), zero);
    b.Evaluate(b.Candidate(t, 0, 1, "b"), negative);
    b.Finish();
  }
  auto [data, m] = Load(dir.path());
  const auto& t = FindTask(m, "guarded");
  EXPECT_TRUE(t.correct);
  EXPECT_EQ(t.invalid_speedups, 2);
  EXPECT_FALSE(t.best_speedup[kEager].has_value());
  const auto* g = FindGroup(m, TaskClass::kHeadline, "strict");
  EXPECT_EQ(g->baselines[kEager].measured, 0);
  EXPECT_EQ(g->baselines[kEager].correct_without_speedup, 1);
  EXPECT_FALSE(g->baselines[kEager].geomean_speedup.has_value());
  EXPECT_EQ(*g->baselines[kEager].fast_p[P(0)], 0.0);  // correct, but no speedup > 0 measured
  EXPECT_EQ(*g->correctness_rate, 1.0);
}

TEST(ReportMetrics, MissingBaselinesAreNotMeasuredNotInvented) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    // Verdict version 1 timing: eager only.
    b.Evaluate(b.Candidate(b.Task("eager_only"), 0, 0, "x"), Correct(1.5));
    // Correct, not timed at all.
    VerdictSpec untimed;
    untimed.timed = false;
    b.Evaluate(b.Candidate(b.Task("untimed"), 0, 0, "x"), untimed);
    // All baselines, new fields.
    VerdictSpec full = Correct(3.0);
    full.new_timing_fields = true;
    full.compile_median_s = 5e-4;
    full.speedup_vs_compile = 1.5;
    full.speedup_vs_best_baseline = 1.5;
    full.sol_fraction = 0.4;
    b.Evaluate(b.Candidate(b.Task("full"), 0, 0, "x"), full);
    b.Finish();
  }
  auto [data, m] = Load(dir.path());
  const auto* g = FindGroup(m, TaskClass::kHeadline, "strict");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->baselines[kEager].measured, 2);
  EXPECT_EQ(g->baselines[kEager].correct_without_speedup, 1);
  EXPECT_EQ(g->baselines[kCompile].measured, 1);
  EXPECT_EQ(g->baselines[kCompile].correct_without_speedup, 2);
  EXPECT_NEAR(*g->baselines[kCompile].geomean_speedup, 1.5, 1e-12);
  EXPECT_EQ(g->baselines[kBest].measured, 1);
  EXPECT_FALSE(FindTask(m, "eager_only").best_speedup[kCompile].has_value());
  EXPECT_FALSE(FindTask(m, "eager_only").best_sol_fraction.has_value());
  EXPECT_EQ(g->sol_fraction.n, 1);
  EXPECT_DOUBLE_EQ(*g->sol_fraction.median, 0.4);
  const auto& untimed = FindTask(m, "untimed");
  EXPECT_TRUE(untimed.correct);
  EXPECT_FALSE(untimed.best_speedup[kEager].has_value());
  EXPECT_EQ(untimed.best_id, data.tasks[untimed.task_index].candidates[0].record.id);
}

TEST(ReportMetrics, DegenerateTaskIsReportedApart) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    b.Evaluate(b.Candidate(b.Task("normal"), 0, 0, "x"), Correct(2.0));
    VerdictSpec d = Correct(50.0);
    d.degenerate = true;
    b.Evaluate(b.Candidate(b.Task("zeros"), 0, 0, "x"), d);
    b.Finish();
  }
  auto [data, m] = Load(dir.path());
  EXPECT_EQ(m.headline_tasks, 1);
  EXPECT_EQ(m.degenerate_tasks, 1);
  const auto* h = FindGroup(m, TaskClass::kHeadline, "strict");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->tasks, 1);
  EXPECT_NEAR(*h->baselines[kEager].geomean_speedup, 2.0, 1e-12);  // the 50x is not in it
  const auto* d = FindGroup(m, TaskClass::kDegenerate, "strict");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->tasks, 1);
  const auto& z = FindTask(m, "zeros");
  EXPECT_EQ(z.task_class, TaskClass::kDegenerate);
  EXPECT_EQ(z.degenerate_flags, "all_zero, constant");
}

TEST(ReportMetrics, HeldForReviewIsNeverBestAndIsReportedApart) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    auto t = b.Task("suspicious");
    b.Evaluate(b.Candidate(t, 0, 0, "x"), Correct(1.2));
    VerdictSpec held = Correct(40.0);
    held.new_timing_fields = true;
    held.held_for_review = true;
    held.review_reason = "speedup above 10x";
    b.Evaluate(b.Candidate(t, 0, 1, "y"), held);
    b.Evaluate(b.Candidate(b.Task("plain"), 0, 0, "x"), Correct(2.0));
    b.Finish();
  }
  auto [data, m] = Load(dir.path());
  const auto& t = FindTask(m, "suspicious");
  EXPECT_EQ(t.task_class, TaskClass::kHeld);
  ASSERT_EQ(t.held.size(), 1u);
  EXPECT_EQ(t.held[0].reason, "speedup above 10x");
  EXPECT_DOUBLE_EQ(*t.held[0].speedup_vs_eager, 40.0);
  EXPECT_DOUBLE_EQ(*t.best_speedup[kEager], 1.2);  // the held 40x is not its best
  EXPECT_EQ(t.correct_candidates, 2);
  EXPECT_EQ(m.held_tasks, 1);
  const auto* h = FindGroup(m, TaskClass::kHeadline, "strict");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->tasks, 1);
  EXPECT_NEAR(*h->baselines[kEager].geomean_speedup, 2.0, 1e-12);
  ASSERT_NE(FindGroup(m, TaskClass::kHeld, "strict"), nullptr);
}

// One rule for "best" with the synthesis loop (store/ranking.h): the report's best candidate is
// the one the run wrote to best/ — the lowest timed median — even when an earlier candidate's
// speedup is larger because its own eager baseline measured slower. Before, the report took the
// largest speedup and named another kernel than the console and best/.
TEST(ReportMetrics, TheBestCandidateIsTheLoopsBestByMedian) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    auto t = b.Task("noisy_eager");
    VerdictSpec first;  // 2 ms, eager measured at 10 ms: 5x
    first.candidate_median_s = 2e-3;
    first.eager_median_s = 10e-3;
    first.speedup_vs_eager = 5.0;
    b.Evaluate(b.Candidate(t, 0, 0, "a"), first);
    VerdictSpec faster;  // 1 ms, eager measured at 4 ms: 4x, but the faster kernel
    faster.candidate_median_s = 1e-3;
    faster.eager_median_s = 4e-3;
    faster.speedup_vs_eager = 4.0;
    auto c1 = b.Candidate(t, 0, 1, "b");
    b.Evaluate(c1, faster);
    b.Finish();
  }
  auto [data, m] = Load(dir.path());
  const auto& t = FindTask(m, "noisy_eager");
  EXPECT_EQ(t.best_id, data.tasks[0].candidates[1].record.id);
  EXPECT_DOUBLE_EQ(*t.best_speedup[kEager], 4.0);  // the best candidate's own speedup
}

// Solved is one rule too: a task whose only correct candidate is held for review is correct (a
// hold doubts the time, not the result), apart from the headline, with that candidate as best.
TEST(ReportMetrics, ATaskWhoseOnlyCorrectCandidateIsHeldIsSolvedAndApart) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    auto t = b.Task("only_held");
    VerdictSpec held = Correct(40.0);
    held.new_timing_fields = true;
    held.held_for_review = true;
    held.review_reason = "no FLOP or byte count for the physics floor";
    b.Evaluate(b.Candidate(t, 0, 0, "x"), held);
    b.Finish();
  }
  auto [data, m] = Load(dir.path());
  const auto& t = FindTask(m, "only_held");
  EXPECT_TRUE(t.correct);
  EXPECT_EQ(t.task_class, TaskClass::kHeld);
  EXPECT_EQ(t.best_id, data.tasks[0].candidates[0].record.id);
}

TEST(ReportMetrics, PrecisionGroupsAreNotPooled) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    b.Evaluate(b.Candidate(b.Task("s"), 0, 0, "x"), Correct(2.0));
    VerdictSpec mixed = Correct(8.0);
    mixed.policy = "mixed";
    mixed.atol = mixed.rtol = 1e-2;
    b.Evaluate(b.Candidate(b.Task("m", "mixed"), 0, 0, "x"), mixed);
    b.Finish();
  }
  auto [data, m] = Load(dir.path());
  const auto* s = FindGroup(m, TaskClass::kHeadline, "strict");
  const auto* x = FindGroup(m, TaskClass::kHeadline, "mixed");
  ASSERT_NE(s, nullptr);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(s->tasks, 1);
  EXPECT_EQ(x->tasks, 1);
  EXPECT_NEAR(*s->baselines[kEager].geomean_speedup, 2.0, 1e-12);
  EXPECT_NEAR(*x->baselines[kEager].geomean_speedup, 8.0, 1e-12);
  EXPECT_DOUBLE_EQ(*x->precision.atol, 1e-2);
  EXPECT_EQ(x->precision.Describe(), "mixed (atol 0.01, rtol 0.01)");
}

TEST(ReportMetrics, ImprovementPerIteration) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    auto t = b.Task("improving");
    b.Evaluate(b.Candidate(t, 0, 0, "a"), Failed("compile_error"));
    b.Evaluate(b.Candidate(t, 0, 1, "b"), Correct(1.5));
    b.Evaluate(b.Candidate(t, 0, 2, "c"), Correct(1.2));
    b.Evaluate(b.Candidate(t, 0, 3, "d"), Correct(3.0));
    b.Evaluate(b.Candidate(t, 1, 0, "e"), Correct(0.9));  // a second sample, correct at once
    auto u = b.Task("late");
    b.Evaluate(b.Candidate(u, 0, 0, "a"), Failed("mismatch"));
    b.Evaluate(b.Candidate(u, 0, 3, "b"), Correct(4.0));
    b.Finish();
  }
  auto [data, m] = Load(dir.path());
  EXPECT_EQ(m.max_iteration, 3);
  const auto& t = FindTask(m, "improving");
  ASSERT_EQ(t.best_so_far.size(), 4u);
  EXPECT_DOUBLE_EQ(*t.best_so_far[0], 0.9);
  EXPECT_DOUBLE_EQ(*t.best_so_far[1], 1.5);
  EXPECT_DOUBLE_EQ(*t.best_so_far[2], 1.5);
  EXPECT_DOUBLE_EQ(*t.best_so_far[3], 3.0);
  const auto* g = FindGroup(m, TaskClass::kHeadline, "strict");
  ASSERT_EQ(g->iterations.size(), 4u);
  EXPECT_DOUBLE_EQ(g->iterations[0].correct_rate, 0.5);
  EXPECT_DOUBLE_EQ(*g->iterations[0].fast_1, 0.0);
  EXPECT_NEAR(*g->iterations[0].geomean_best, 0.9, 1e-12);
  EXPECT_EQ(g->iterations[0].measured, 1);
  EXPECT_DOUBLE_EQ(*g->iterations[1].fast_1, 0.5);
  EXPECT_DOUBLE_EQ(g->iterations[3].correct_rate, 1.0);
  EXPECT_NEAR(*g->iterations[3].geomean_best, std::sqrt(3.0 * 4.0), 1e-12);
  EXPECT_DOUBLE_EQ(*g->iterations[3].fast_1, 1.0);
}

TEST(ReportMetrics, CostAndTokensPerTask) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    auto t = b.Task("a");
    auto c1 = b.LlmCall(100, 50, 0.01);
    auto c2 = b.LlmCall(200, 100, 0.02);
    auto analysis = b.LlmCall(10, 5, 0.001);
    b.LlmCall(7, 0, 0.5);  // a failed call that produced nothing
    auto x = b.Candidate(t, 0, 0, "x", std::nullopt, c1);
    b.Evaluate(x, Correct(1.1));
    b.Recommend(x, R"({"advice":"tile"})", analysis);
    b.Evaluate(b.Candidate(b.Task("b"), 0, 0, "y", std::nullopt, c2), Correct(1.3));
    b.Finish();
  }
  auto [data, m] = Load(dir.path());
  const auto& a = FindTask(m, "a");
  EXPECT_EQ(a.input_tokens, 110);
  EXPECT_EQ(a.output_tokens, 55);
  EXPECT_NEAR(a.cost_usd, 0.011, 1e-12);
  EXPECT_EQ(FindTask(m, "b").input_tokens, 200);
  EXPECT_EQ(data.llm_calls, 4);
  EXPECT_EQ(data.unattributed_input_tokens, 7);
  EXPECT_NEAR(data.unattributed_cost_usd, 0.5, 1e-12);
  EXPECT_NEAR(*m.cost_per_task_usd, (0.01 + 0.02 + 0.001 + 0.5) / 2, 1e-12);
  EXPECT_NEAR(*m.tokens_per_task, (150 + 300 + 15 + 7) / 2.0, 1e-12);
}

TEST(ReportMetrics, LatestEvaluationOfACandidateCounts) {
  ScratchDir dir;
  {
    StoreBuilder b(dir.path());
    auto c = b.Candidate(b.Task("re"), 0, 0, "x");
    b.Evaluate(c, Failed("infra_error"));
    b.Evaluate(c, Correct(2.5));
    b.Finish();
  }
  auto [data, m] = Load(dir.path());
  EXPECT_EQ(data.tasks[0].candidates[0].evaluations, 2);
  EXPECT_TRUE(FindTask(m, "re").correct);
  EXPECT_DOUBLE_EQ(*FindTask(m, "re").best_speedup[kEager], 2.5);
}

// Evaluations are read in storage order, not sorted: the latest by time still wins when it was
// stored first, when it lands in a later parse batch than the older one, and an older unreadable
// verdict is not counted as unreadable.
TEST(ReportRunData, LatestEvaluationWinsWhateverTheStorageOrder) {
  ScratchDir dir;
  std::string first;
  {
    StoreBuilder b(dir.path());
    auto t = b.Task("many");
    first = b.Candidate(t, 0, 0, "x0");
    b.Evaluate(first, Correct(1.5));
    for (int i = 1; i < 1200; ++i) b.Evaluate(b.Candidate(t, 0, i, fmt::format("x{}", i)), Correct(1.0));
    b.Evaluate(first, Correct(3.0));  // newer, stored 1,200 rows later
    auto late = b.Candidate(b.Task("late"), 0, 0, "y");
    const std::string newest = b.Evaluate(late, Correct(2.0));
    // An older evaluation of `late` stored after its newer one, with a verdict that is not an
    // object.
    store::EvaluationRecord older;
    older.id = "evl-older";
    older.run_id = b.run_id();
    older.candidate_id = late;
    older.target = "cpu/cpp";
    older.device = "cpu";
    older.status = store::EvaluationStatus::kInfraError;
    older.verdict_json = "[]";
    older.created_at = store::Timestamp(std::chrono::milliseconds(1000));
    ASSERT_TRUE(b.store().AddEvaluation(older).has_value());
    b.Finish();
    (void)newest;
  }
  auto [data, m] = Load(dir.path());
  EXPECT_EQ(data.unparsable_verdicts, 0);
  ASSERT_EQ(data.tasks.size(), 2u);
  const auto& late = data.tasks[0].candidates[0];  // tasks by name: "late", "many"
  const auto& many = data.tasks[1];
  ASSERT_EQ(many.record.name, "many");
  ASSERT_EQ(many.candidates.size(), 1200u);
  EXPECT_EQ(many.candidates[0].record.id, first);
  EXPECT_EQ(many.candidates[0].evaluations, 2);
  EXPECT_DOUBLE_EQ(*FindTask(m, "many").best_speedup[kEager], 3.0);
  for (std::size_t i = 1; i < many.candidates.size(); ++i) {
    ASSERT_EQ(many.candidates[i].verdict.status, "correct") << i;
    ASSERT_DOUBLE_EQ(*many.candidates[i].verdict.speedup_vs_eager, 1.0) << i;
  }
  EXPECT_EQ(late.evaluations, 2);
  EXPECT_EQ(late.evaluation->status, store::EvaluationStatus::kCorrect);
  EXPECT_TRUE(FindTask(m, "late").correct);
  EXPECT_DOUBLE_EQ(*FindTask(m, "late").best_speedup[kEager], 2.0);
}

TEST(ReportRunData, RefusesWhatIsNotARunDirectory) {
  ScratchDir dir;
  auto missing = OpenRunForReading(dir.path() / "nope", "");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(missing.error().message.find("not a run directory"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "nope"));  // nothing created
  auto empty = OpenRunForReading(dir.path(), "");
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message.find("no run.sqlite"), std::string::npos);
  {
    StoreBuilder b(dir.path(), "run-x");
  }
  auto unknown = OpenRunForReading(dir.path(), "run-y");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("run-x"), std::string::npos);
  EXPECT_TRUE(OpenRunForReading(dir.path() / "run.sqlite", "run-x").has_value());
}

}  // namespace
}  // namespace kforge::report
