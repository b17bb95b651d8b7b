// The cold protocol's fields parsed, the baselines' cache, calibrations and the physics floor, and
// what a correct candidate's timing means (JudgeTiming: speedups, impossible times, review).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>

#include "baseline_cache.h"
#include "kforge/eval/calibration.h"
#include "kforge/eval/verdict.h"
#include "runner_protocol.h"
#include "timing_judgement.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

TimingStats Stats(double median) {
  TimingStats s;
  s.clock = "events-cold";
  s.median_s = s.mean_s = s.min_s = s.p10_s = s.p90_s = median;
  s.samples = 20;
  s.stopped_by = "noise";
  return s;
}

Calibration H200Like() {
  Calibration c;
  c.device_name = "Test GPU";
  c.copy_bytes_per_s = 4e12;
  c.matmul_flops_per_s = {{"float32", 50e12}, {"tf32", 400e12}, {"bfloat16", 800e12}};
  return c;
}

TEST(ColdTimingParseTest, SideFiguresAndSuspicionAreRead) {
  const char* text = R"({"clock": "events-cold", "median_s": 1e-4, "mean_s": 1e-4, "min_s": 1e-4,
      "p10_s": 1e-4, "p90_s": 1e-4, "rel_std": 0.001, "samples": 40, "stopped_by": "noise",
      "discarded": 3, "sm_clock_mhz": 1980, "cold": {"flush_bytes": 125829120},
      "warm": {"clock": "events-warm", "median_s": 6e-5, "samples": 10},
      "host_sync": {"median_s": 2e-3, "floor_s": 1e-5, "side_stream_suspect": true},
      "graph_replay": {"error": "RuntimeError: capture failed"}})";
  TimingOutcome t = ParseTimingField(text);
  ASSERT_TRUE(t.stats) << t.error;
  EXPECT_EQ(t.stats->discarded, 3);
  EXPECT_EQ(t.stats->sm_clock_mhz, 1980);
  EXPECT_DOUBLE_EQ(t.stats->warm_median_s.value(), 6e-5);
  EXPECT_DOUBLE_EQ(t.stats->host_sync_median_s.value(), 2e-3);
  EXPECT_TRUE(t.stats->side_stream_suspect);
  EXPECT_FALSE(t.stats->graph_replay_median_s);
  EXPECT_EQ(t.stats->graph_replay_error, "RuntimeError: capture failed");
  EXPECT_NE(t.stats->Describe().find("SUSPECT"), std::string::npos);
  EXPECT_NE(t.stats->Describe().find("warm 60 us"), std::string::npos) << t.stats->Describe();
}

TEST(PhysicsFloorTest, RateFollowsDtypeAndPolicy) {
  const Calibration c = H200Like();
  CallWork gemm{.flops = 2.0 * 4096 * 4096 * 4096, .min_bytes = 3.0 * 4096 * 4096 * 4, .dtype = "float32"};
  auto strict = FloorFor(gemm, c, PrecisionPolicy::kStrict);
  ASSERT_TRUE(strict);
  EXPECT_EQ(strict->rate_used, "float32");
  EXPECT_NEAR(strict->compute_s, *gemm.flops / 50e12, 1e-12);
  EXPECT_NEAR(strict->memory_s, gemm.min_bytes / 4e12, 1e-12);
  EXPECT_DOUBLE_EQ(strict->floor_s, strict->compute_s);
  EXPECT_EQ(FloorFor(gemm, c, PrecisionPolicy::kTf32)->rate_used, "tf32");
  EXPECT_EQ(FloorFor(gemm, c, PrecisionPolicy::kMixed)->rate_used, "bfloat16");
  CallWork half = gemm;
  half.dtype = "bfloat16";
  EXPECT_EQ(FloorFor(half, c, PrecisionPolicy::kStrict)->rate_used, "bfloat16");
  // Without FLOPs (no FLOP counter) the floor is the memory time.
  CallWork copy{.flops = std::nullopt, .min_bytes = 8e9, .dtype = "float32"};
  auto memory = FloorFor(copy, c, PrecisionPolicy::kStrict);
  ASSERT_TRUE(memory);
  EXPECT_DOUBLE_EQ(memory->floor_s, 2e-3);
  EXPECT_DOUBLE_EQ(memory->compute_s, 0);
}

TEST(CalibrationTest, JsonRoundTripAndErrorsNameTheFile) {
  Calibration c = H200Like();
  c.target = "nvidia/cuda";
  c.measured_at = "2026-11-29T00:00:00Z";
  auto back = Calibration::FromJson(c.ToJson(), "x.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->device_name, "Test GPU");
  EXPECT_DOUBLE_EQ(back->copy_bytes_per_s, 4e12);
  EXPECT_EQ(back->matmul_flops_per_s.size(), 3u);
  auto bad = Calibration::FromJson("{\"calibration_version\": 7}", "/cache/c.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("/cache/c.json"), std::string::npos);
  EXPECT_NE(bad.error().message.find("kforge calibrate"), std::string::npos);
}

// A CPU as the calibrate phase measures it: memory, and each data cache level's copy rate.
Calibration CpuLike() {
  Calibration c;
  c.device_name = "Test CPU";
  c.copy_bytes_per_s = 10e9;
  c.cache_levels = {{"L1d", 64e3, 200e9}, {"L2", 1e6, 100e9}, {"L3", 32e6, 40e9}};
  c.matmul_flops_per_s = {{"float32", 100e9}};
  return c;
}

TEST(PhysicsFloorTest, ACpuWorkingSetIsRatedAtTheCacheLevelItFitsIn) {
  const Calibration c = CpuLike();
  // ReLU on 4 MB in and 4 MB out: 8 MB fits the 32 MB L3, so its copy rate bounds it, not memory's.
  CallWork relu{.flops = std::nullopt, .min_bytes = 8e6, .dtype = "float32"};
  auto floor = FloorFor(relu, c, PrecisionPolicy::kStrict);
  ASSERT_TRUE(floor);
  EXPECT_EQ(floor->memory_level, "L3");
  EXPECT_DOUBLE_EQ(floor->memory_s, 8e6 / 40e9);
  EXPECT_NE(floor->Describe().find("L3 copy rate"), std::string::npos) << floor->Describe();
  CallWork tiny{.flops = std::nullopt, .min_bytes = 32e3, .dtype = "float32"};
  EXPECT_EQ(FloorFor(tiny, c, PrecisionPolicy::kStrict)->memory_level, "L1d");
  CallWork big{.flops = std::nullopt, .min_bytes = 1e9, .dtype = "float32"};
  auto memory = FloorFor(big, c, PrecisionPolicy::kStrict);
  EXPECT_EQ(memory->memory_level, "memory");
  EXPECT_DOUBLE_EQ(memory->memory_s, 1e9 / 10e9);
  // A level whose rate could not be measured gives no memory time (never memory's slower one):
  // without FLOPs either, there is no floor at all.
  Calibration unmeasured = c;
  unmeasured.cache_levels[2].copy_bytes_per_s.reset();
  EXPECT_FALSE(FloorFor(relu, unmeasured, PrecisionPolicy::kStrict));
}

TEST(CalibrationTest, CacheLevelsRoundTripAndTheEnvironmentDecidesAMatch) {
  Calibration c = CpuLike();
  c.cache_levels[1].copy_bytes_per_s.reset();
  c.environment_json = R"({"device_name": "Test CPU", "torch": "2.11", "python": "3.12"})";
  auto back = Calibration::FromJson(c.ToJson(), "x.json");
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->cache_levels.size(), 3u);
  EXPECT_EQ(back->cache_levels[2].name, "L3");
  EXPECT_DOUBLE_EQ(back->cache_levels[2].bytes, 32e6);
  EXPECT_FALSE(back->cache_levels[1].copy_bytes_per_s);
  // A version-1 calibration (no cache levels) still reads.
  auto v1 = Calibration::FromJson(
      R"({"calibration_version": 1, "device_name": "Old", "copy_bytes_per_s": 1e10,
          "matmul_flops_per_s": {"float32": 1e11}})",
      "old.json");
  ASSERT_TRUE(v1) << v1.error().message;
  EXPECT_TRUE(v1->cache_levels.empty());
  // Same device and libraries (other fields and their order do not matter): a match.
  EXPECT_TRUE(CalibrationMatches(
      *back, R"({"python": "3.12", "torch": "2.11", "device_name": "Test CPU", "pid": 7})"));
  EXPECT_FALSE(CalibrationMatches(
      *back, R"({"python": "3.12", "torch": "2.12", "device_name": "Test CPU"})"));
  Calibration unknown = c;
  unknown.environment_json.clear();
  EXPECT_FALSE(CalibrationMatches(unknown, c.environment_json));
}

Verdict TimedVerdict(double candidate, double eager) {
  Verdict v;
  v.status = EvalStatus::kCorrect;
  v.policy = PrecisionPolicy::kStrict;
  v.timing = Stats(candidate);
  v.eager_baseline = Stats(eager);
  return v;
}

TEST(JudgeTimingTest, SpeedupsAgainstEachBaselineAndTheFaster) {
  Verdict v = TimedVerdict(1e-3, 3e-3);
  v.compile_baseline = Stats(2e-3);
  v.compile_max_autotune_baseline = Stats(1.5e-3);
  JudgeTiming(v, nullptr);
  EXPECT_DOUBLE_EQ(v.speedup_vs_eager.value(), 3.0);
  EXPECT_DOUBLE_EQ(v.speedup_vs_compile.value(), 1.5);  // the faster compile mode
  EXPECT_DOUBLE_EQ(v.speedup_vs_best_baseline.value(), 1.5);
  EXPECT_FALSE(v.held_for_review);
  EXPECT_FALSE(v.sol_fraction);  // no calibration
  EXPECT_EQ(v.status, EvalStatus::kCorrect);
}

TEST(JudgeTimingTest, SpeedOfLightAndImpossibleTimes) {
  const Calibration c = H200Like();
  Verdict v = TimedVerdict(4e-3, 5e-3);
  v.work = CallWork{.flops = std::nullopt, .min_bytes = 8e9, .dtype = "float32"};  // floor 2 ms
  JudgeTiming(v, &c);
  ASSERT_TRUE(v.sol_fraction);
  EXPECT_DOUBLE_EQ(*v.sol_fraction, 0.5);
  EXPECT_EQ(v.status, EvalStatus::kCorrect);

  Verdict fooled = TimedVerdict(0.5e-3, 5e-3);  // a quarter of the floor: impossible
  fooled.work = v.work;
  JudgeTiming(fooled, &c);
  EXPECT_EQ(fooled.status, EvalStatus::kRejected);
  EXPECT_NE(fooled.message.find("impossible time"), std::string::npos) << fooled.message;
}

TEST(JudgeTimingTest, AnHonestCacheResidentTimeIsNotImpossible) {
  // 8 MB at memory's 10 GB/s would be a floor of 0.8 ms; from L3 at 40 GB/s it is 0.2 ms, and an
  // honest ReLU that takes 0.3 ms counts (the floor used to be memory's: "impossible time").
  const Calibration c = CpuLike();
  Verdict v = TimedVerdict(0.3e-3, 0.6e-3);
  v.work = CallWork{.flops = std::nullopt, .min_bytes = 8e6, .dtype = "float32"};
  JudgeTiming(v, &c);
  EXPECT_EQ(v.status, EvalStatus::kCorrect) << v.message;
  ASSERT_TRUE(v.floor);
  EXPECT_EQ(v.floor->memory_level, "L3");
}

TEST(JudgeTimingTest, BigSpeedupsAndSideStreamsAreHeldForReview) {
  Verdict fast = TimedVerdict(1e-4, 2e-3);  // 20x
  JudgeTiming(fast, nullptr);
  EXPECT_TRUE(fast.held_for_review);
  EXPECT_NE(fast.review_reason.find("20x"), std::string::npos) << fast.review_reason;
  EXPECT_NE(fast.review_reason.find("no calibration"), std::string::npos) << fast.review_reason;
  EXPECT_EQ(fast.status, EvalStatus::kCorrect);

  // With a floor, physics judges: 20x over eager at a time the floor allows counts, unheld (a
  // fused decode kernel against several small PyTorch ops).
  const Calibration c = H200Like();
  Verdict fused = TimedVerdict(1e-4, 2e-3);
  fused.work = CallWork{.flops = std::nullopt, .min_bytes = 4e7, .dtype = "float32"};  // 10 us
  JudgeTiming(fused, &c);
  EXPECT_FALSE(fused.held_for_review) << fused.review_reason;
  EXPECT_EQ(fused.status, EvalStatus::kCorrect);
  // A calibration but no work figures: physics cannot judge, and the reason says so.
  Verdict unknown = TimedVerdict(1e-4, 2e-3);
  JudgeTiming(unknown, &c);
  EXPECT_TRUE(unknown.held_for_review);
  EXPECT_NE(unknown.review_reason.find("work"), std::string::npos) << unknown.review_reason;

  Verdict hidden = TimedVerdict(1e-3, 1.2e-3);
  hidden.timing->side_stream_suspect = true;
  hidden.timing->host_sync_median_s = 5e-3;
  JudgeTiming(hidden, nullptr);
  EXPECT_TRUE(hidden.held_for_review);
  EXPECT_NE(hidden.review_reason.find("another stream"), std::string::npos);

  Verdict plain = TimedVerdict(1e-3, 2e-3);
  JudgeTiming(plain, nullptr);
  EXPECT_FALSE(plain.held_for_review);
}

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("kforge-bc-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(BaselineCacheTest, KeyedByTaskEnvironmentAndTimingOptions) {
  TempDir dir;
  BaselineCache cache(dir.path());
  Task task;
  task.source = "class Model: ...";
  const std::string env = R"({"python": "3.12", "torch": "2.11", "device_name": "H200",
                              "numpy": "2.0", "triton": "3.6", "pid": 1234})";
  const TimingOptions timing;
  const std::string key = BaselineKey(task, "nvidia/cuda", env, timing);
  EXPECT_TRUE(cache.Find(key).empty());
  cache.Store(key, {{"compile", R"({"clock": "events-cold", "median_s": 1e-3})"},
                    {"compile-max-autotune", R"({"error": "no triton"})"}});
  auto found = cache.Find(key);
  ASSERT_EQ(found.size(), 1u);  // errors are not cached
  EXPECT_NE(found["compile"].find("median_s"), std::string::npos);

  // Fields that do not change a timing do not change the key; library versions, the task,
  // the target and the timing options do.
  EXPECT_EQ(key, BaselineKey(task, "nvidia/cuda", R"({"python": "3.12", "torch": "2.11",
      "device_name": "H200", "numpy": "2.0", "triton": "3.6", "pid": 99})", timing));
  EXPECT_NE(key, BaselineKey(task, "nvidia/cuda", R"({"python": "3.12", "torch": "2.12",
      "device_name": "H200", "numpy": "2.0", "triton": "3.6"})", timing));
  EXPECT_NE(key, BaselineKey(task, "nvidia/triton", env, timing));
  Task other = task;
  other.overrides.push_back({"batch_size", "8"});
  EXPECT_NE(key, BaselineKey(other, "nvidia/cuda", env, timing));
  TimingOptions longer;
  longer.max_seconds = 30;
  EXPECT_NE(key, BaselineKey(task, "nvidia/cuda", env, longer));

  EXPECT_FALSE(cache.LastEnvironment("nvidia/cuda|cuda:0"));
  cache.SetLastEnvironment("nvidia/cuda|cuda:0", env);
  ASSERT_TRUE(cache.LastEnvironment("nvidia/cuda|cuda:0"));
  EXPECT_EQ(*cache.LastEnvironment("nvidia/cuda|cuda:0"), NormalisedEnvironment(env));
}

}  // namespace
}  // namespace kforge
