// Timing in verdicts: the runner's `timing` field parsed into TimingStats, how a verdict shows
// it, and IsBetter, the selection rule of the synthesis loop.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kforge/eval/timing.h"
#include "kforge/eval/verdict.h"
#include "runner_protocol.h"

namespace kforge {
namespace {

constexpr const char* kStats =
    R"({"clock": "perf_counter", "median_s": 0.002, "mean_s": 0.0021, "min_s": 0.0019,
        "p10_s": 0.00195, "p90_s": 0.0023, "rel_std": 0.004, "samples": 250,
        "stopped_by": "noise", "baseline": "eager"})";

TEST(TimingParseTest, StatisticsBecomeTimingStats) {
  TimingOutcome t = ParseTimingField(kStats);
  ASSERT_TRUE(t.stats) << t.error;
  EXPECT_TRUE(t.error.empty());
  EXPECT_EQ(t.stats->clock, "perf_counter");
  EXPECT_DOUBLE_EQ(t.stats->median_s, 0.002);
  EXPECT_DOUBLE_EQ(t.stats->mean_s, 0.0021);
  EXPECT_DOUBLE_EQ(t.stats->min_s, 0.0019);
  EXPECT_DOUBLE_EQ(t.stats->p10_s, 0.00195);
  EXPECT_DOUBLE_EQ(t.stats->p90_s, 0.0023);
  EXPECT_DOUBLE_EQ(t.stats->rel_std, 0.004);
  EXPECT_EQ(t.stats->samples, 250);
  EXPECT_EQ(t.stats->stopped_by, "noise");
}

TEST(TimingParseTest, ErrorsAndMalformedFieldsGiveNoStatistics) {
  TimingOutcome err = ParseTimingField(R"({"error": "timing: RuntimeError: boom"})");
  EXPECT_FALSE(err.stats);
  EXPECT_EQ(err.error, "timing: RuntimeError: boom");
  for (const char* bad : {"", "[1, 2]", R"({"clock": "perf_counter"})",
                          R"({"clock": "perf_counter", "median_s": "fast", "mean_s": 1,
                              "min_s": 1, "p10_s": 1, "p90_s": 1, "rel_std": 0, "samples": 3,
                              "stopped_by": "min"})",
                          R"({"clock": "perf_counter", "median_s": 1, "mean_s": 1, "min_s": 1,
                              "p10_s": 1, "p90_s": 1, "rel_std": 0, "samples": 0,
                              "stopped_by": "min"})"}) {
    TimingOutcome t = ParseTimingField(bad);
    EXPECT_FALSE(t.stats) << bad;
    EXPECT_FALSE(t.error.empty()) << bad;
  }
}

TEST(TimingParseTest, CandidateResultCarriesTiming) {
  auto r = ParseCandidateResult(
      fmt::format(R"({{"protocol": 1, "phase": "candidate", "status": "ok", "trials": [],
                      "timing": {}}})", kStats),
      "/tmp");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->timing.stats);
  EXPECT_EQ(r->timing.stats->samples, 250);
  auto untimed = ParseCandidateResult(R"({"protocol": 1, "status": "ok", "trials": []})", "/tmp");
  ASSERT_TRUE(untimed);
  EXPECT_FALSE(untimed->timing.stats);
}

TEST(TimingJobTest, TimingOptionsGoIntoTheJobOnlyWhenSet) {
  Task task;
  task.name = "t";
  CandidateJob job;
  job.task = &task;
  EXPECT_FALSE(nlohmann::json::parse(CandidateJobJson(job)).contains("timing"));
  TimingOptions options;
  options.min_samples = 12;
  options.max_seconds = 3;
  job.timing = options;
  auto j = nlohmann::json::parse(CandidateJobJson(job));
  EXPECT_EQ(j["timing"]["min_samples"], 12);
  EXPECT_EQ(j["timing"]["max_seconds"], 3.0);
  EXPECT_EQ(j["timing"]["target_rel_std"], 0.005);
  ReferenceJob ref;
  ref.task = &task;
  ref.timing = TimingOptions{};
  EXPECT_EQ(nlohmann::json::parse(ReferenceJobJson(ref))["timing"]["min_seconds"], 0.5);
}

TimingStats Stats(double median, int samples, std::string stopped_by) {
  TimingStats t;
  t.clock = "perf_counter";
  t.median_s = t.mean_s = t.min_s = t.p10_s = t.p90_s = median;
  t.samples = samples;
  t.stopped_by = std::move(stopped_by);
  return t;
}

Verdict Correct(std::optional<double> median) {
  Verdict v;
  v.status = EvalStatus::kCorrect;
  if (median) {
    v.timing = Stats(*median, 10, "min");
  }
  return v;
}

Verdict Failed(EvalStatus status, std::optional<double> median = std::nullopt) {
  Verdict v = Correct(median);
  v.status = status;
  return v;
}

TEST(IsBetterTest, CorrectBeatsNotCorrect) {
  EXPECT_TRUE(IsBetter(Correct(std::nullopt), Failed(EvalStatus::kMismatch, 0.001)));
  EXPECT_TRUE(IsBetter(Correct(1.0), Failed(EvalStatus::kCompileError)));
  EXPECT_FALSE(IsBetter(Failed(EvalStatus::kMismatch, 0.001), Correct(1.0)));
  EXPECT_FALSE(IsBetter(Failed(EvalStatus::kTimeout), Failed(EvalStatus::kMismatch)));
}

TEST(IsBetterTest, LowerMedianWinsBetweenCorrectOnes) {
  EXPECT_TRUE(IsBetter(Correct(0.001), Correct(0.002)));
  EXPECT_FALSE(IsBetter(Correct(0.002), Correct(0.001)));
}

TEST(IsBetterTest, TiesAndMissingTimingKeepTheIncumbent) {
  EXPECT_FALSE(IsBetter(Correct(0.001), Correct(0.001)));
  EXPECT_FALSE(IsBetter(Correct(0.001), Correct(std::nullopt)));
  EXPECT_FALSE(IsBetter(Correct(std::nullopt), Correct(0.001)));
  EXPECT_FALSE(IsBetter(Correct(std::nullopt), Correct(std::nullopt)));
}

TEST(VerdictTimingTest, ShownInTextAndJson) {
  Verdict v = Correct(0.002);
  v.timing->stopped_by = "noise";
  v.eager_baseline = Stats(0.005, 40, "timeout");
  v.speedup_vs_eager = 2.5;
  const std::string text = v.ToText();
  EXPECT_NE(text.find("timing    median 2 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("eager     median 5 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("speedup   2.5x vs PyTorch eager"), std::string::npos) << text;
  auto j = nlohmann::json::parse(v.ToJson());
  EXPECT_EQ(j["timing"]["candidate"]["median_s"], 0.002);
  EXPECT_EQ(j["timing"]["candidate"]["stopped_by"], "noise");
  EXPECT_EQ(j["timing"]["eager_baseline"]["samples"], 40);
  EXPECT_EQ(j["timing"]["speedup_vs_eager"], 2.5);

  Verdict untimed = Correct(std::nullopt);
  EXPECT_TRUE(nlohmann::json::parse(untimed.ToJson())["timing"].is_null());
  EXPECT_EQ(untimed.ToText().find("timing"), std::string::npos);

  Verdict failed_timing = Correct(std::nullopt);
  failed_timing.timing_error = "timing: RuntimeError: boom\n  frame";
  EXPECT_NE(failed_timing.ToText().find("timing    not measured: timing: RuntimeError: boom\n"),
            std::string::npos);
  auto fj = nlohmann::json::parse(failed_timing.ToJson());
  EXPECT_TRUE(fj["timing"]["candidate"].is_null());
  EXPECT_TRUE(fj["timing"]["speedup_vs_eager"].is_null());
}

TEST(StepTimesTest, RunnerStepsAreNumbersOnlyAndReachTheVerdict) {
  auto r = ParseCandidateResult(
      R"({"protocol": 1, "status": "ok", "trials": [],
          "steps": {"call": 0.25, "write_tensors": 0.5, "forged": "fast", "nested": {"a": 1}}})",
      "/tmp");
  ASSERT_TRUE(r.has_value());
  auto steps = nlohmann::json::parse(r->steps_json);
  EXPECT_EQ(steps.size(), 2u);
  EXPECT_DOUBLE_EQ(steps["call"].get<double>(), 0.25);
  auto bare = ParseReferenceResult(R"({"protocol": 1, "status": "ok", "trials": []})", "/tmp",
                                   "/tmp");
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->steps_json, "");

  Verdict v;
  v.steps = {{"take_slot", 0.01}, {"reference", 0.4}};
  v.candidate_steps = r->steps_json;
  auto j = nlohmann::json::parse(v.ToJson());
  EXPECT_DOUBLE_EQ(j["seconds"]["steps"]["orchestrator"]["reference"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(j["seconds"]["steps"]["candidate"]["write_tensors"].get<double>(), 0.5);
  EXPECT_TRUE(j["seconds"]["steps"]["reference"].is_null());
}

TEST(FormatSecondsTest, PicksAUnit) {
  EXPECT_EQ(FormatSeconds(812e-9), "812 ns");
  EXPECT_EQ(FormatSeconds(12.3e-6), "12.3 us");
  EXPECT_EQ(FormatSeconds(4.56e-3), "4.56 ms");
  EXPECT_EQ(FormatSeconds(1.5), "1.5 s");
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

// A stored verdict read back keeps what the synthesis loop ranks by and quotes in its prompts, so
// that a resumed run decides and asks exactly as the first did.
TEST(VerdictFromJsonTest, RoundTripKeepsTimingsSpeedupsFlagsAndHold) {
  Verdict v;
  v.status = EvalStatus::kCorrect;
  v.message = "matches the reference on 5 trials";
  v.task_name = "76_Gemm_Add_ReLU";
  v.target = "nvidia/cuda";
  v.policy = PrecisionPolicy::kTf32;
  v.tolerance = ToleranceOf(PrecisionPolicy::kTf32);
  v.degenerate.mostly_zero = true;
  TimingStats t;
  t.clock = "events-cold";
  t.median_s = 0.0037;
  t.mean_s = 0.00371;
  t.min_s = 0.00369;
  t.p10_s = 0.00369;
  t.p90_s = 0.0037;
  t.rel_std = 0.0048;
  t.samples = 136;
  t.stopped_by = "noise";
  t.sm_clock_mhz = 1980;
  t.warm_median_s = 0.00371;
  t.host_sync_median_s = 0.00371;
  v.timing = t;
  TimingStats eager = t;
  eager.median_s = 0.00274;
  v.eager_baseline = eager;
  v.compile_baseline_error = "torch.compile is not available";
  v.speedup_vs_eager = 0.741;
  v.speedup_vs_best_baseline = 0.741;
  v.sol_fraction = 0.12;
  v.held_for_review = true;
  v.review_reason = "work the timing events did not see";
  v.total_seconds = 13.5;

  const Verdict back = Verdict::FromJson(v.ToJson());
  EXPECT_EQ(back.status, EvalStatus::kCorrect);
  EXPECT_EQ(back.message, v.message);
  EXPECT_EQ(back.task_name, v.task_name);
  EXPECT_EQ(back.policy, PrecisionPolicy::kTf32);
  EXPECT_TRUE(back.degenerate.mostly_zero);
  ASSERT_TRUE(back.timing);
  EXPECT_EQ(back.timing->Describe(), v.timing->Describe());
  EXPECT_EQ(back.timing->SideFigures(), v.timing->SideFigures());
  ASSERT_TRUE(back.eager_baseline);
  EXPECT_DOUBLE_EQ(back.eager_baseline->median_s, 0.00274);
  EXPECT_FALSE(back.compile_baseline);
  EXPECT_EQ(back.compile_baseline_error, v.compile_baseline_error);
  ASSERT_TRUE(back.speedup_vs_eager);
  EXPECT_DOUBLE_EQ(*back.speedup_vs_eager, 0.741);
  EXPECT_FALSE(back.speedup_vs_compile);
  EXPECT_DOUBLE_EQ(*back.sol_fraction, 0.12);
  EXPECT_TRUE(back.held_for_review);
  EXPECT_EQ(back.review_reason, v.review_reason);
  EXPECT_DOUBLE_EQ(back.total_seconds, 13.5);
  // The ranking sees the same medians.
  Verdict slower = back;
  slower.timing->median_s = 0.005;
  EXPECT_TRUE(IsBetter(back, slower));
}

TEST(VerdictFromJsonTest, UnreadableTextIsAnInfraErrorThatSaysSo) {
  const Verdict v = Verdict::FromJson("not json");
  EXPECT_EQ(v.status, EvalStatus::kInfraError);
  EXPECT_NE(v.message.find("not a JSON object"), std::string::npos);
}

// A noisy CPU timing, or a candidate and a baseline on two clocks, is said to be so wherever the
// verdict is shown (`kforge eval --time` printed 51-798 % noise without a word).
TEST(TimingWarningsTest, NoiseAboveTheThresholdAndTwoClocksAreSaid) {
  TimingStats quiet;
  quiet.clock = "perf_counter";
  quiet.median_s = 1e-3;
  quiet.rel_std = 0.02;
  EXPECT_TRUE(TimingWarnings(quiet, quiet).empty());
  TimingStats noisy = quiet;
  noisy.rel_std = 5.95;
  TimingStats events = quiet;
  events.clock = "opencl-events";
  const auto warnings = TimingWarnings(noisy, events);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("noisy (595 % relative noise, above 10 %)"), std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[1].find("timed by perf_counter and the eager baseline by opencl-events"),
            std::string::npos)
      << warnings[1];

  Verdict v;
  v.status = EvalStatus::kCorrect;
  v.timing = noisy;
  v.eager_baseline = quiet;
  EXPECT_NE(v.ToText().find("WARNING   the candidate's timing is noisy"), std::string::npos)
      << v.ToText();
}

}  // namespace
}  // namespace kforge
