// The parent's side of the judge (HarnessSession) against the runner's harness mode
// (`python3 -m kforge_runner --harness`, runner/HARNESS.md): both sides of protocol 2 agree on
// the wire — ids echoed, hello, empty samples before load, a module candidate loaded from its
// source and the task file, calls whose outputs are copied frozen, timed samples.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "kforge/core/files.h"
#include "kforge/eval/harness_session.h"
#include "kforge/target/probe.h"
#include "runner_process.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

const fs::path kRunner = fs::path(KFORGE_SOURCE_HOME) / "runner";

constexpr const char* kTask = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return []
)";

constexpr const char* kCandidate = R"(import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp_min(x, 0.0)
)";

class PythonHarnessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kRunner / "kforge_runner" / "harness" / "loop.py")) {
      GTEST_SKIP() << "this runner has no harness mode (runner/kforge_runner/harness/)";
    }
    if (RunnerPython().empty()) GTEST_SKIP() << "no Python that imports torch here";
    dir_ = fs::temp_directory_path() / fmt::format("kforge-pyharness-{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "scratch");
    fs::permissions(dir_, fs::perms::all & ~fs::perms::others_write & ~fs::perms::group_write);
    fs::permissions(dir_ / "scratch", fs::perms::all);
    ASSERT_TRUE(WriteFile(dir_ / "task.py", kTask));
    ASSERT_TRUE(WriteFile(dir_ / "candidate.py", kCandidate));
    for (const char* f : {"task.py", "candidate.py"}) ::chmod((dir_ / f).c_str(), 0644);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::unique_ptr<HarnessSession> Start() {
    HarnessLaunch launch;
    launch.argv = {RunnerPython(), "-m", "kforge_runner", "--harness"};
    launch.env = HarnessEnvironment(dir_ / "scratch");
    launch.env.push_back("PYTHONPATH=" + kRunner.string());
    launch.policy.scratch_dir = dir_ / "scratch";
    launch.policy.visible_paths = {dir_, kRunner};
    auto s = HarnessSession::Start(launch);
    EXPECT_TRUE(s) << s.error().message;
    if (!s) return nullptr;
    (*s)->set_timeout(std::chrono::seconds(120));
    return std::move(*s);
  }

  ArenaTensor Floats(HarnessSession& s, const std::vector<float>& values) {
    TensorSpec spec;
    spec.name = "x";
    spec.dtype = "float32";
    spec.shape = {4, 2};
    auto t = s.Place(spec);
    EXPECT_TRUE(t);
    std::memcpy(s.Bytes(*t).data(), values.data(), values.size() * 4);
    return *t;
  }

  fs::path dir_;
};

TEST_F(PythonHarnessTest, AModuleCandidateIsServedOverTheProtocol) {
  auto s = Start();
  ASSERT_TRUE(s);
  auto hello = s->Hello({.device = "cpu", .arena_bytes = 1 << 20});
  ASSERT_TRUE(hello) << hello.error().message << "\n" << hello.error().diagnostics << "\n"
                     << s->StderrSoFar();
  EXPECT_EQ(hello->protocol, 2);
  // Empty samples before load: the protocol's own cost, no candidate code in the process.
  const std::vector<float> x = {-1, 2, -3, 4, 5, -6, 7, -8};
  TimingSet set{.inputs = {Floats(*s, x)}, .outputs = {}};
  set.outputs.push_back(*s->Place(set.inputs[0].spec));
  ASSERT_TRUE(s->PrepareTiming({.sets = {set}, .clock = "cpu"}));
  auto empty = s->Sample({.set = 0, .mode = "cpu"});
  ASSERT_TRUE(empty) << empty.error().message << empty.error().diagnostics;
  EXPECT_GE(empty->seconds, 0);

  LoadRequest load;
  load.kind = "module";
  load.backend = "kernelbench";
  load.source_file = dir_ / "candidate.py";
  load.task_file = dir_ / "task.py";
  load.init_seed = 7;
  auto loaded = s->Load(load);
  ASSERT_TRUE(loaded) << loaded.error().message << "\n" << loaded.error().diagnostics;

  const ArenaTensor in = Floats(*s, x);
  auto out = s->Place(in.spec);
  auto after = s->arena().Allocate(in.region.bytes);
  ASSERT_TRUE(out && after);
  auto r = s->Call({.inputs = {in}, .outputs = {*out}, .inputs_after = {*after}, .reuse = false});
  ASSERT_TRUE(r) << r.error().message << "\n" << r.error().diagnostics;
  ASSERT_EQ(r->outputs.size(), 1u);
  std::vector<float> y(8);
  std::memcpy(y.data(), r->outputs[0].data.data(), 32);
  EXPECT_EQ(y, (std::vector<float>{0, 2, 0, 4, 5, 0, 7, 0}));
  EXPECT_TRUE(r->problems.empty());
  EXPECT_TRUE(r->findings.empty());

  // A timed sample after load; its outputs copied frozen like a call's.
  ASSERT_TRUE(s->PrepareTiming({.sets = {set}, .clock = "cpu"}));
  auto timed = s->Sample({.set = 0, .mode = "cpu", .repeat = 3});
  ASSERT_TRUE(timed) << timed.error().message << timed.error().diagnostics;
  EXPECT_GT(timed->seconds, 0);
  auto copied = s->FreezeAndCopy(set.outputs);
  ASSERT_TRUE(copied);
  std::memcpy(y.data(), (*copied)[0].data.data(), 32);
  EXPECT_EQ(y, (std::vector<float>{0, 2, 0, 4, 5, 0, 7, 0}));
}

}  // namespace
}  // namespace kforge
