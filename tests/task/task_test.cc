#include "kforge/task/task.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace kforge {
namespace {

namespace fs = std::filesystem;

class TaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kforge-task-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  fs::path dir_;
};

constexpr const char* kProblem = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 2

N = 64

def get_inputs():
    return [torch.rand(N)]

def get_init_inputs():
    return []
)";

TEST_F(TaskTest, LoadsAProblemFile) {
  auto task = LoadTask(Write("double_it.py", kProblem).string());
  ASSERT_TRUE(task) << task.error().message;
  EXPECT_EQ(task->name, "double_it");
  EXPECT_EQ(task->policy, PrecisionPolicy::kStrict);
}

TEST_F(TaskTest, LoadsAKernelBenchEntry) {
  if (!fs::exists(KernelBenchDir() / "level2.jsonl")) GTEST_SKIP() << "no KernelBench data";
  auto task = LoadTask("kernelbench:level2#9");
  ASSERT_TRUE(task) << task.error().message;
  EXPECT_EQ(task->problem_id, 9);
  EXPECT_EQ(task->level, 2);
  EXPECT_EQ(task->origin, "level2.jsonl#9");
  auto same = LoadTask((KernelBenchDir() / "level2.jsonl").string() + "#9");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->source, task->source);
}

TEST_F(TaskTest, MalformedTasksGetClearErrors) {
  auto missing = LoadTask(Write("no_inputs.py", "class Model:\n    pass\n").string());
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("get_inputs()"), std::string::npos);
  EXPECT_NE(missing.error().message.find("no_inputs.py"), std::string::npos);

  auto bad_json = Write("bad.jsonl", "{not json}\n");
  auto e1 = LoadTask(bad_json.string() + "#1");
  ASSERT_FALSE(e1);
  EXPECT_NE(e1.error().message.find("bad.jsonl:1"), std::string::npos) << e1.error().message;

  auto no_entry = Write("one.jsonl", R"({"problem_id": 1, "name": "x", "code": "class Model(x):\n"})" "\n");
  auto e2 = LoadTask(no_entry.string() + "#7");
  ASSERT_FALSE(e2);
  EXPECT_NE(e2.error().message.find("no entry with problem_id 7"), std::string::npos);

  for (const char* spec : {"x.jsonl#abc", "kernelbench:level1", "task.txt", ""}) {
    auto e = LoadTask(spec);
    ASSERT_FALSE(e) << spec;
    EXPECT_FALSE(e.error().message.empty());
  }
}

TEST_F(TaskTest, SuiteManifestWithOverridesAndPolicy) {
  Write("p.py", std::string(kProblem) + "shape = (8, 8)\nscale = 1.0\n");
  auto manifest = Write("suite.toml", R"(
name = "tiny"
[[task]]
id = "dbl"
source = "p.py"
overrides = { N = 16, shape = [4, 4], scale = 0.5 }
policy = "tf32"
)");
  auto suite = LoadSuite(manifest);
  ASSERT_TRUE(suite) << suite.error().message;
  ASSERT_EQ(suite->tasks.size(), 1u);
  const Task& t = suite->tasks[0];
  EXPECT_EQ(t.id, "dbl");
  EXPECT_EQ(t.policy, PrecisionPolicy::kTf32);
  ASSERT_EQ(t.overrides.size(), 3u);
  std::map<std::string, std::string> by_name;
  for (const auto& o : t.overrides) by_name[o.name] = o.value_json;
  EXPECT_EQ(by_name["N"], "16");
  EXPECT_EQ(by_name["shape"], "[4,4]");
  EXPECT_EQ(by_name["scale"], "0.5");
}

TEST_F(TaskTest, BadManifestNamesFileAndLine) {
  auto manifest = Write("broken.toml", "name = \"x\"\n[[task]\nsource = 1\n");
  auto suite = LoadSuite(manifest);
  ASSERT_FALSE(suite);
  EXPECT_NE(suite.error().message.find("broken.toml:2"), std::string::npos)
      << suite.error().message;
  auto no_source = Write("nosrc.toml", "[[task]]\nid = \"a\"\n");
  auto e = LoadSuite(no_source);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("missing 'source'"), std::string::npos);
}

// One problem at four sizes is four tasks: before, all four were named after the problem, so a
// bench stored them as one task ("1/4 tasks with a correct kernel" though all were correct) and
// wrote their best kernels into one folder at once ("cannot rename ...kernel.cpp.tmp...").
TEST_F(TaskTest, OneProblemAtFourSizesIsFourTasks) {
  Write("relu.py", kProblem);
  auto manifest = Write("sizes.toml", R"(
[[task]]
source = "relu.py"
overrides = { N = 16 }
[[task]]
source = "relu.py"
overrides = { N = 64 }
[[task]]
id = "big"
source = "relu.py"
overrides = { N = 4096 }
[[task]]
source = "relu.py"
)");
  auto suite = LoadSuite(manifest);
  ASSERT_TRUE(suite) << suite.error().message;
  ASSERT_EQ(suite->tasks.size(), 4u);
  EXPECT_EQ(suite->tasks[0].name, "relu[N=16]");
  EXPECT_EQ(suite->tasks[0].id, "relu_n_16");
  EXPECT_EQ(suite->tasks[1].name, "relu[N=64]");
  EXPECT_EQ(suite->tasks[2].name, "big");  // its own id names it
  EXPECT_EQ(suite->tasks[2].id, "big");
  EXPECT_EQ(suite->tasks[3].name, "relu");  // the one without a variant keeps the plain name
  EXPECT_EQ(suite->tasks[3].id, "relu");
}

TEST_F(TaskTest, ASuiteThatListsOneTaskTwiceIsRefusedAtLoad) {
  Write("p.py", kProblem);
  auto twice = Write("twice.toml", R"(
[[task]]
source = "p.py"
overrides = { N = 16 }
[[task]]
source = "p.py"
overrides = { N = 16 }
)");
  auto suite = LoadSuite(twice);
  ASSERT_FALSE(suite);
  EXPECT_NE(suite.error().message.find("twice.toml: tasks 1 and 2 are the same task"),
            std::string::npos)
      << suite.error().message;
  EXPECT_NE(suite.error().message.find("N=16"), std::string::npos) << suite.error().message;

  auto same_id = Write("same_id.toml", R"(
[[task]]
id = "a"
source = "p.py"
[[task]]
id = "a"
source = "p.py"
overrides = { N = 8 }
)");
  auto ids = LoadSuite(same_id);
  ASSERT_FALSE(ids);
  EXPECT_NE(ids.error().message.find("tasks 1 and 2 both have id 'a'"), std::string::npos)
      << ids.error().message;
  // Names stay as they are where they are unique (SUITE.toml#ID and stored runs keep working).
  auto distinct = Write("distinct.toml", R"(
[[task]]
source = "p.py"
overrides = { N = 16 }
)");
  auto one = LoadSuite(distinct);
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(one->tasks[0].name, "p");
  EXPECT_EQ(one->tasks[0].id, "p");
}

TEST_F(TaskTest, PolicyTolerances) {
  EXPECT_EQ(ToleranceOf(PrecisionPolicy::kStrict).atol, 1e-4);
  EXPECT_EQ(ToleranceOf(PrecisionPolicy::kTf32).rtol, 1e-3);
  EXPECT_EQ(ToleranceOf(PrecisionPolicy::kMixed).atol, 1e-2);
  EXPECT_FALSE(ParsePrecisionPolicy("fp8"));
}

TEST_F(TaskTest, AMisspelledSuiteKeyIsAnErrorNamingTheNearestKey) {
  Write("p.py", kProblem);
  auto typo = Write("typo.toml", R"(name = "tiny"
[[task]]
id = "dbl"
source = "p.py"
overides = { N = 16 }
)");
  auto suite = LoadSuite(typo);
  ASSERT_FALSE(suite) << "a misspelled key was ignored";
  const std::string& m = suite.error().message;
  EXPECT_NE(m.find("unknown key 'overides'"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'overrides'?"), std::string::npos) << m;
  EXPECT_NE(m.find("typo.toml (task 1) (line 5)"), std::string::npos) << m;

  auto top = Write("top.toml", "name = \"x\"\ndescripton = \"y\"\n[[task]]\nsource = \"p.py\"\n");
  auto e = LoadSuite(top);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("did you mean 'description'?"), std::string::npos)
      << e.error().message;
}

TEST_F(TaskTest, AnOverrideOfNoGlobalIsAnErrorBeforeAnyRunner) {
  Write("p.py", kProblem);
  auto manifest = Write("o.toml", "[[task]]\nsource = \"p.py\"\noverrides = { n = 16 }\n");
  auto suite = LoadSuite(manifest);
  ASSERT_FALSE(suite);
  EXPECT_NE(suite.error().message.find("no module-level global 'n'"), std::string::npos)
      << suite.error().message;
  EXPECT_NE(suite.error().message.find("did you mean 'N'?"), std::string::npos)
      << suite.error().message;

  auto task = LoadTask(Write("q.py", kProblem).string());
  ASSERT_TRUE(task);
  Task t = *task;
  EXPECT_TRUE(AddOverrides(t, {"N=32"}));
  ASSERT_EQ(t.overrides.size(), 1u);
  EXPECT_EQ(t.overrides[0].value_json, "32");
  Task typo = *task;
  auto bad = AddOverrides(typo, {"NN=32"});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("'NN'"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("did you mean 'N'?"), std::string::npos);
  Task malformed = *task;
  auto no_eq = AddOverrides(malformed, {"N"});
  ASSERT_FALSE(no_eq);
  EXPECT_NE(no_eq.error().message.find("write NAME=VALUE"), std::string::npos);
}

TEST_F(TaskTest, ModuleGlobalsAreTheTopLevelAssignments) {
  const char* source = R"(""" A docstring with
fake = 1 in it
"""
import torch
batch_size, dim = 16, 1024
eps: float = 1e-5
shape = (
    batch_size,
    inside_call = 3,
)
if True:
    flag = 1
def get_inputs():
    local = 2
    return [torch.rand(batch_size, dim)]
class Model:
    attr = 3
    def forward(self, x):
        return x
after = "x = 1"  # comment = 2
x == 3
)";
  const std::vector<std::string> expected = {"batch_size", "dim", "eps", "shape", "flag",
                                             "after"};
  EXPECT_EQ(ModuleGlobals(source), expected);
}

}  // namespace
}  // namespace kforge
