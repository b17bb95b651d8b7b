// MaskMeasuredText against the real templates: two renderings that differ only in what was
// measured (timing, profile summary, device facts) mask to the same text, and renderings that
// differ in the conversation (the candidate, the recommendations) do not.
#include "kforge/prompt/measured_text.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "kforge/prompt/prompt_renderer.h"

namespace kforge {
namespace {

const std::filesystem::path kTemplates = std::filesystem::path(KFORGE_SOURCE_HOME) / "templates";

Task AddTask() {
  Task task;
  task.id = "add";
  task.name = "add";
  task.origin = "test";
  task.source =
      "import torch\nclass Model(torch.nn.Module):\n    def forward(self, a, b):\n"
      "        return a + b\n";
  return task;
}

DeviceFacts Device(const std::string& name, int units, const std::string& note) {
  DeviceFacts d;
  d.name = name;
  d.compute_units = units;
  d.notes = {note};
  return d;
}

// As this machine measured it, and as another machine did: numbers, but also words differ.
constexpr const char* kTimingHere =
    "candidate median 3.22 ms (mean 3.28 ms), noise 39.54 %, stopped by timeout; speedup 10.77x";
constexpr const char* kTimingThere =
    "candidate median 2.16 ms (mean 2.29 ms), noise 4.1 %, stopped by noise; speedup 16.1x";
constexpr const char* kProfileHere =
    "## Profile\ntool: opencl; device: pthread-skylake-avx512-Intel(R) Xeon(R) Processor\n"
    "## Bottleneck\ndominant bottleneck: unknown\n- no hardware counters; the largest kernel "
    "add takes 91% of kernel time\n## Kernels by share of time\n91% add x3\n9% tail x3";
constexpr const char* kProfileThere =
    "## Profile\ntool: opencl; device: pthread-znver3-AMD EPYC 7B13\n"
    "## Bottleneck\ndominant bottleneck: launch-bound\n- 2 launches per call, mean 1.1 ms each\n"
    "- 55% of the call's wall time runs no kernel\n## Launch overhead\nmean kernel duration 1.1 ms";

AnalysisPromptInputs Analysis(const std::string& candidate, const char* timing, const char* profile,
                              DeviceFacts device) {
  AnalysisPromptInputs in;
  in.task = AddTask();
  in.target = *Target::Parse("cpu/opencl");
  in.candidate_file_name = "kernel.py";
  in.candidate_source = candidate;
  in.timing = timing;
  in.profile_summary = profile;
  in.device = std::move(device);
  return in;
}

TEST(MaskMeasuredText, AnalysisPromptsMeasuredElsewhereMaskAlike) {
  const PromptRenderer renderer(kTemplates);
  auto here = renderer.RenderAnalysis(
      Analysis("SOURCE = 'a'", kTimingHere, kProfileHere, Device("Xeon", 2, "AVX-512")));
  auto there = renderer.RenderAnalysis(
      Analysis("SOURCE = 'a'", kTimingThere, kProfileThere, Device("EPYC", 64, "AVX2")));
  auto other_kernel = renderer.RenderAnalysis(
      Analysis("SOURCE = 'b'", kTimingHere, kProfileHere, Device("Xeon", 2, "AVX-512")));
  ASSERT_TRUE(here && there && other_kernel);
  ASSERT_NE(here->user, there->user);
  const std::string masked = MaskMeasuredText(here->user);
  EXPECT_EQ(masked, MaskMeasuredText(there->user));
  EXPECT_NE(masked, MaskMeasuredText(other_kernel->user));
  // The measurements are gone; the request around them stays.
  for (const char* gone : {"stopped by", "launch-bound", "unknown", "Xeon", "AVX-512"}) {
    EXPECT_EQ(masked.find(gone), std::string::npos) << gone << " in\n" << masked;
  }
  for (const char* kept : {"SOURCE = 'a'", "return a + b", "## Timing\n#\n", "Give at most 3"}) {
    EXPECT_NE(masked.find(kept), std::string::npos) << kept << " not in\n" << masked;
  }
}

GenerationPromptInputs Optimization(const char* timing, DeviceFacts device,
                                    const std::string& change) {
  GenerationPromptInputs in;
  in.task = AddTask();
  in.target = *Target::Parse("cpu/opencl");
  in.pass = GenerationPass::kOptimization;
  in.device = std::move(device);
  in.previous = PreviousCandidate{.file_name = "kernel.py",
                                  .source = "SOURCE = 'a'",
                                  .status = "correct",
                                  .diagnostics = "",
                                  .timing = timing};
  in.recommendations = {Recommendation{.bottleneck = "memory",
                                       .evidence = "91% of kernel time in add",
                                       .changes = {change},
                                       .expected_gain = "1.5x"}};
  return in;
}

TEST(MaskMeasuredText, GenerationPromptsMaskTheirTimingAndDeviceFactsOnly) {
  const PromptRenderer renderer(kTemplates);
  auto here = renderer.RenderGeneration(
      Optimization(kTimingHere, Device("Xeon", 2, "AVX-512"), "use float4 loads"));
  auto there = renderer.RenderGeneration(
      Optimization(kTimingThere, Device("EPYC", 64, "AVX2"), "use float4 loads"));
  auto other_advice = renderer.RenderGeneration(
      Optimization(kTimingHere, Device("Xeon", 2, "AVX-512"), "fuse the two kernels"));
  ASSERT_TRUE(here && there && other_advice);
  ASSERT_NE(here->user, there->user);
  const std::string masked = MaskMeasuredText(here->user);
  EXPECT_EQ(masked, MaskMeasuredText(there->user));
  EXPECT_NE(masked, MaskMeasuredText(other_advice->user));
  EXPECT_NE(masked.find("Timing: #\n"), std::string::npos) << masked;
  EXPECT_NE(masked.find("## Device\n#\n"), std::string::npos) << masked;
  EXPECT_NE(masked.find("use float4 loads"), std::string::npos) << masked;
}

TEST(MaskMeasuredText, TextWithoutMeasuredSectionsIsUnchanged) {
  for (const char* text : {"", "hello", "hello\n", "a\n\nb", "## Reference\n- x: 1\n"}) {
    EXPECT_EQ(MaskMeasuredText(text), text) << text;
  }
}

}  // namespace
}  // namespace kforge
