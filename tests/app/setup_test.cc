// The composition root hands every entry point the same parts: a bench's task (assembled by
// exec, completed by CompleteSynthesis) gets the profile pass and the device facts exactly as a
// run's task (SynthesisFor) does, because both come from Setup, not from a copied line.
#include "kforge/app/setup.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace kforge::app {
namespace {

namespace fs = std::filesystem;

Task TinyTask() {
  Task task;
  task.name = "relu";
  task.source =
      "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
      "        return torch.relu(x)\ndef get_inputs():\n    return [torch.rand(4)]\n"
      "def get_init_inputs():\n    return []\n";
  return task;
}

std::unique_ptr<Setup> Build(const std::string& target, store::RunKind kind, bool profile) {
  RunConfig config;
  config.kind = kind;
  config.target = target;
  config.profile = profile;
  // No probe: the parts are built whether or not this machine has the target's device.
  SetupOptions options;
  options.probe = false;
  auto built = Setup::Build(config, std::move(options));
  EXPECT_TRUE(built) << (built ? "" : built.error().error.message);
  return built ? std::move(*built) : nullptr;
}

TEST(SetupTest, ABenchTaskGetsTheProfilePassAndDeviceFactsAsARunTaskDoes) {
  const fs::path profiles = fs::path(::testing::TempDir()) / "setup_test_profiles";
  auto bench = Build("nvidia-h200/cuda", store::RunKind::kBench, /*profile=*/true);
  auto run = Build("nvidia-h200/cuda", store::RunKind::kRun, /*profile=*/true);
  ASSERT_TRUE(bench && run);

  // A bench's task: the setup exec assembles from the template, completed by the root.
  synth::SynthesisSetup bench_task = bench->SynthesisTemplate("run-1");
  bench_task.task = TinyTask();
  bench->CompleteSynthesis(bench_task, profiles);
  // A run's task.
  synth::SynthesisSetup run_task = run->SynthesisFor(TinyTask(), "run-1", profiles);

  for (const synth::SynthesisSetup* s : {&bench_task, &run_task}) {
    EXPECT_TRUE(static_cast<bool>(s->profile_summary)) << "no profile pass";
    ASSERT_TRUE(s->device.has_value()) << "no device facts for an H200 target";
    EXPECT_EQ(s->device->name, run->device_facts()->name);
    EXPECT_NE(s->evaluator, nullptr);
  }
  // Only a run checks its task on its own; a bench checks all of its tasks at once.
  EXPECT_TRUE(static_cast<bool>(run_task.check_task));
}

TEST(SetupTest, NoProfilePassWhenTheConfigurationSaysNoOrTheTargetHasNoKernelProfiler) {
  const fs::path profiles = fs::path(::testing::TempDir()) / "setup_test_profiles";
  auto off = Build("nvidia-h200/cuda", store::RunKind::kBench, /*profile=*/false);
  auto cpu = Build("cpu/cpp", store::RunKind::kBench, /*profile=*/true);
  ASSERT_TRUE(off && cpu);
  synth::SynthesisSetup a = off->SynthesisFor(TinyTask(), "run-1", profiles);
  synth::SynthesisSetup b = cpu->SynthesisFor(TinyTask(), "run-1", profiles);
  EXPECT_FALSE(static_cast<bool>(a.profile_summary));
  EXPECT_FALSE(static_cast<bool>(b.profile_summary));  // CPU C++: no kernel-level profiler
  EXPECT_FALSE(b.device.has_value());                   // nothing known of a CPU's datasheet
}

}  // namespace
}  // namespace kforge::app
