// Timing through the real harness (EvalOptions::time, as `kforge eval --time`): honest relu
// fixtures on cpu/cpp and cpu/opencl (PoCL) come back correct with the candidate's timing and the
// PyTorch eager baseline; without --time there is none.
#include <gtest/gtest.h>

#include "fixture_cases.h"
#include "kforge/eval/evaluator.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge {
namespace {

Result<Task> ReluTask() {
  auto suite = LoadSuite(testing::SourceTree() / "examples/suites/ci-cpu.toml");
  if (!suite) return std::unexpected(suite.error());
  for (auto& t : suite->tasks) {
    if (t.id == "relu") return t;
  }
  return NotFound("no relu task in examples/suites/ci-cpu.toml");
}

EvalOptions TimedOptions() {
  EvalOptions options;
  options.candidate_timeout = std::chrono::seconds(60);
  options.memory_limit_bytes = 4ull << 30;
  options.time = true;
  // Short enough for CI; at least min_samples samples come in well before max_seconds.
  options.timing = TimingOptions{.min_samples = 10, .min_seconds = 0.05, .max_seconds = 2,
                                 .target_rel_std = 0.005, .warmup_seconds = 0.05};
  return options;
}

void ExpectStats(const std::optional<TimingStats>& t, const std::string& error,
                 const std::string& clock) {
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->clock, clock);
  EXPECT_GE(t->samples, 10);
  EXPECT_GT(t->median_s, 0);
  EXPECT_LE(t->min_s, t->median_s);
  EXPECT_TRUE(t->stopped_by == "noise" || t->stopped_by == "timeout" || t->stopped_by == "min" ||
              t->stopped_by == "ci")
      << t->stopped_by;
}

// Parent-driven timing through kforge-harness (native candidates): the median's interval, the
// checked samples (at least three per timing set) and the parent's own figure are in the stats.
void ExpectHarnessStats(const TimingStats& t) {
  EXPECT_TRUE(t.stopped_by == "ci" || t.stopped_by == "timeout") << t.stopped_by;
  ASSERT_TRUE(t.median_ci_low_s && t.median_ci_high_s);
  EXPECT_LE(*t.median_ci_low_s, t.median_s);
  EXPECT_GE(*t.median_ci_high_s, t.median_s);
  EXPECT_GE(t.checked_samples, 6) << "three per timing set, two sets";
  EXPECT_GT(t.check_seconds, 0);
  ASSERT_TRUE(t.parent_median_s) << "the clock check ran";
}

class TimedEvalTest : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(TimedEvalTest, CorrectCandidateHasTimingAndEagerBaseline) {
  const auto& [target, candidate] = GetParam();
  auto backend = NewBackend(*Target::Parse(target));
  const Availability a = backend->Probe();
  if (!a.usable()) GTEST_SKIP() << target << " is not usable here";
  auto task = ReluTask();
  ASSERT_TRUE(task) << task.error().message;
  CompileService compiler;
  Evaluator evaluator(compiler, TimedOptions());
  Verdict v = evaluator.Evaluate(*task, *backend, testing::SourceTree() / candidate);
  ASSERT_EQ(v.status, EvalStatus::kCorrect) << v.ToText();
  // The candidate and the eager baseline are timed by one clock on a CPU, OpenCL included.
  ExpectStats(v.timing, v.timing_error, "perf_counter");
  if (target == "cpu/cpp") ExpectHarnessStats(*v.timing);
  ExpectStats(v.eager_baseline, v.eager_baseline_error, "perf_counter");
  ASSERT_TRUE(v.speedup_vs_eager);
  EXPECT_DOUBLE_EQ(*v.speedup_vs_eager, v.eager_baseline->median_s / v.timing->median_s);
  EXPECT_NE(v.ToText().find("speedup"), std::string::npos) << v.ToText();
}

INSTANTIATE_TEST_SUITE_P(
    Relu, TimedEvalTest,
    ::testing::Values(std::pair<std::string, std::string>{"cpu/cpp",
                                                          "tests/fixtures/candidates/relu/honest.cpp"},
                      std::pair<std::string, std::string>{
                          "cpu/opencl", "tests/fixtures/candidates/relu/honest.cl.py"}),
    [](const auto& param_info) { return param_info.param.first == "cpu/cpp" ? "Cpp" : "OpenCl"; });

TEST(TimedEvalTest, WrongCandidateKeepsNoTiming) {
  auto backend = NewBackend(*Target::Parse("cpu/cpp"));
  if (!backend->Probe().usable()) GTEST_SKIP() << "cpu/cpp is not usable here";
  auto suite = LoadSuite(testing::SourceTree() / "examples/suites/ci-cpu.toml");
  ASSERT_TRUE(suite);
  const Task* softmax = nullptr;
  for (const auto& t : suite->tasks) {
    if (t.id == "softmax") softmax = &t;
  }
  ASSERT_NE(softmax, nullptr);
  CompileService compiler;
  Evaluator evaluator(compiler, TimedOptions());
  Verdict v = evaluator.Evaluate(*softmax, *backend,
                                 testing::SourceTree() / "tests/fixtures/candidates/softmax/wrong_axis.cpp");
  ASSERT_EQ(v.status, EvalStatus::kMismatch) << v.ToText();
  EXPECT_FALSE(v.timing);
  EXPECT_FALSE(v.speedup_vs_eager);
  EXPECT_TRUE(v.eager_baseline) << v.eager_baseline_error;
}

TEST(UntimedEvalTest, NoTimingUnlessAsked) {
  auto backend = NewBackend(*Target::Parse("cpu/cpp"));
  if (!backend->Probe().usable()) GTEST_SKIP() << "cpu/cpp is not usable here";
  auto task = ReluTask();
  ASSERT_TRUE(task) << task.error().message;
  CompileService compiler;
  EvalOptions options = TimedOptions();
  options.time = false;
  Evaluator evaluator(compiler, options);
  Verdict v = evaluator.Evaluate(*task, *backend,
                                 testing::SourceTree() / "tests/fixtures/candidates/relu/honest.cpp");
  ASSERT_EQ(v.status, EvalStatus::kCorrect) << v.ToText();
  EXPECT_FALSE(v.timing);
  EXPECT_FALSE(v.eager_baseline);
  EXPECT_TRUE(v.timing_error.empty());
}

}  // namespace
}  // namespace kforge
