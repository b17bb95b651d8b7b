// The out-of-process device-time check (eval/device_time_check.h): its parsing of ncu's CSV and
// the cases it skips; the check itself runs on a GPU (bench/h200_judge.sh).
#include "kforge/eval/device_time_check.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kforge/target/target.h"

namespace kforge {
namespace {

TEST(DeviceTimeCheckTest, ParsesNcuDurationsInLaunchOrder) {
  const std::string csv =
      "==PROF== Connected to process 123 (/x/kforge-harness-cuda)\n"
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\","
      "\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\","
      "\"Metric Unit\",\"Metric Value\"\n"
      "\"0\",\"123\",\"kforge-harness-cuda\",\"h\",\"relu_kernel(const float *, float *, long)\","
      "\"1\",\"13\",\"(256, 1, 1)\",\"(16384, 1, 1)\",\"0\",\"9.0\",\"Command line profiler "
      "metrics\",\"gpu__time_duration.sum\",\"ns\",\"17,184\"\n"
      "\"1\",\"123\",\"kforge-harness-cuda\",\"h\",\"relu_kernel(const float *, float *, long)\","
      "\"1\",\"13\",\"(256, 1, 1)\",\"(16384, 1, 1)\",\"0\",\"9.0\",\"Command line profiler "
      "metrics\",\"gpu__time_duration.sum\",\"usecond\",\"3.5\"\n"
      "==PROF== Disconnected from process 123\n";
  const auto d = ParseNcuDurations(csv);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NEAR(d[0], 17.184e-6, 1e-12);
  EXPECT_NEAR(d[1], 3.5e-6, 1e-12);
  EXPECT_TRUE(ParseNcuDurations("no csv here\n").empty());
}

TEST(DeviceTimeCheckTest, SkipsWhatNsightComputeCannotTime) {
  Task task;
  task.name = "relu";
  auto backend = NewBackend(*Target::Parse("cpu/cpp"));
  CompileService compiler;
  const DeviceTimeCheck c =
      CheckDeviceTime(compiler, task, *backend, "candidate.cpp", 1e-3);
  EXPECT_EQ(c.outcome, DeviceTimeCheck::Outcome::kSkipped);
  EXPECT_NE(c.reason.find("no out-of-process device timer"), std::string::npos) << c.reason;
  const auto j = nlohmann::json::parse(c.ToJson());
  EXPECT_EQ(j["outcome"], "skipped");
  EXPECT_EQ(j["reported_s"], 1e-3);
  EXPECT_NE(c.Describe().find("skipped"), std::string::npos);
}

}  // namespace
}  // namespace kforge
