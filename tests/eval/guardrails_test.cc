// Static guardrails: every red-team exploit in tests/fixtures/redteam/guardrails.toml is rejected
// (or flagged) by the rule it exists for, every honest candidate fixture passes without a reject,
// and the lexer keeps comments and strings out of the rules.
#include "kforge/eval/guardrails.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "fixture_cases.h"
#include "kforge/core/files.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

std::string Describe(const GuardrailReport& report) {
  std::string out;
  for (const auto& f : report.findings) {
    out += fmt::format("  {} {}\n", GuardrailSeverityName(f.severity), f.Format());
  }
  return out.empty() ? "  (no findings)\n" : out;
}

bool HasFinding(const GuardrailReport& report, std::string_view rule, GuardrailSeverity severity) {
  return std::any_of(report.findings.begin(), report.findings.end(), [&](const auto& f) {
    return f.rule == rule && f.severity == severity;
  });
}

struct Checked {
  GuardrailReport report;
  CandidateKind kind;
};

Checked CheckFile(const fs::path& file, const std::string& target_text,
                  const GuardrailOptions& options) {
  auto target = Target::Parse(target_text);
  EXPECT_TRUE(target) << target_text;
  auto backend = NewBackend(*target);
  auto kind = backend->KindOf(file);
  EXPECT_TRUE(kind) << file;
  auto source = ReadFile(file);
  EXPECT_TRUE(source) << file;
  return {CheckCandidate(*source, target->model, *kind, options), *kind};
}

// ---------------------------------------------------------------------------------------------
// Red team.

struct Exploit {
  std::string file;
  std::string target;
  std::string rule;
  GuardrailSeverity severity = GuardrailSeverity::kReject;
  PrecisionPolicy policy = PrecisionPolicy::kStrict;
  std::vector<std::int64_t> dims;
  std::string why;
};

void PrintTo(const Exploit& e, std::ostream* os) { *os << e.file << " (" << e.rule << ")"; }

fs::path RedTeamDir() { return testing::SourceTree() / "tests/fixtures/redteam"; }

std::vector<Exploit> LoadExploits() {
  std::vector<Exploit> out;
  toml::table manifest;
  try {
    manifest = toml::parse_file((RedTeamDir() / "guardrails.toml").string());
  } catch (const toml::parse_error& e) {
    ADD_FAILURE() << "tests/fixtures/redteam/guardrails.toml: " << e.description();
    return out;
  }
  const auto* exploits = manifest["exploit"].as_array();
  if (exploits == nullptr) return out;
  for (const auto& node : *exploits) {
    const auto& t = *node.as_table();
    Exploit e;
    e.file = t["file"].value_or(std::string());
    e.target = t["target"].value_or(std::string());
    e.rule = t["rule"].value_or(std::string());
    e.why = t["why"].value_or(std::string());
    if (t["severity"].value_or(std::string("reject")) == "flag") {
      e.severity = GuardrailSeverity::kFlag;
    }
    if (auto policy = ParsePrecisionPolicy(t["policy"].value_or(std::string("strict")))) {
      e.policy = *policy;
    }
    if (const auto* dims = t["dims"].as_array()) {
      for (const auto& d : *dims) e.dims.push_back(d.value_or(std::int64_t{0}));
    }
    out.push_back(std::move(e));
  }
  return out;
}

class RedTeamGuardrailTest : public ::testing::TestWithParam<Exploit> {};

TEST_P(RedTeamGuardrailTest, CaughtForTheReasonItExists) {
  const Exploit& e = GetParam();
  GuardrailOptions options;
  options.policy = e.policy;
  options.task_dimensions = e.dims;
  auto checked = CheckFile(RedTeamDir() / e.file, e.target, options);
  const auto& report = checked.report;
  EXPECT_TRUE(HasFinding(report, e.rule, e.severity))
      << e.file << " (" << e.why << ") should be " << GuardrailSeverityName(e.severity)
      << "ed by " << e.rule << "; found:\n" << Describe(report);
  if (e.severity == GuardrailSeverity::kReject) {
    EXPECT_TRUE(report.rejected());
    // What goes back to the model names the rule, the line and what to do instead.
    const std::string text = report.FormatRejects();
    EXPECT_NE(text.find(e.rule), std::string::npos) << text;
    EXPECT_NE(text.find("line "), std::string::npos) << text;
  }
  for (const auto& f : report.findings) {
    EXPECT_GT(f.line, 0) << f.Format();
    EXPECT_FALSE(f.message.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(RedTeam, RedTeamGuardrailTest, ::testing::ValuesIn(LoadExploits()),
                         [](const auto& param_info) {
                           std::string name = param_info.param.file;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// Every rule of the header has at least one exploit.
TEST(RedTeamGuardrailTest, EveryRuleHasAnExploit) {
  std::set<std::string> covered;
  for (const auto& e : LoadExploits()) covered.insert(e.rule);
  for (const char* rule : {"reference-op-call", "stream-creation", "thread-creation",
                           "graph-capture", "timer-patch", "harness-introspection",
                           "inherited-descriptor", "output-cache", "exception-fallback",
                           "precision-downcast", "runtime-install", "hardcoded-shape"}) {
    EXPECT_TRUE(covered.count(rule)) << "no red-team fixture for " << rule;
  }
}

// ---------------------------------------------------------------------------------------------
// Honest candidates: every fixture with "honest" in its name and the KernelBench load_inline
// submissions, on each target they are written for, under strict, with their task's sizes.

struct Honest {
  fs::path file;
  std::string target;
  std::string task;  // the ci-cpu suite's task id (the fixture's folder)
};

std::vector<Honest> HonestCandidates() {
  std::vector<Honest> out;
  const fs::path root = testing::SourceTree() / "tests/fixtures/candidates";
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    if (name.find("honest") == std::string::npos && !name.starts_with("kernelbench_inline")) {
      continue;
    }
    const std::string task = entry.path().parent_path().filename().string();
    std::vector<std::string> targets;
    if (name.ends_with(".cl.py")) {
      targets = {"cpu/opencl", "nvidia/opencl"};
    } else if (name.ends_with(".triton.py")) {
      targets = {"nvidia/triton"};
    } else if (name.ends_with(".py")) {
      targets = {name.find("cuda") != std::string::npos ? "nvidia/cuda" : "cpu/cpp"};
    } else if (name.ends_with(".cu")) {
      targets = {"nvidia/cuda"};
    } else if (name.ends_with(".hip")) {
      targets = {"amd/hip"};
    } else if (name.ends_with(".cpp")) {
      targets = {"cpu/cpp"};
    }
    for (const auto& t : targets) out.push_back({entry.path(), t, task});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.file, a.target) < std::tie(b.file, b.target);
  });
  return out;
}

// The ci-cpu suite's task sizes by task id; empty when the KernelBench data is absent here.
const std::map<std::string, Task>& SuiteTasks() {
  static const std::map<std::string, Task> tasks = [] {
    std::map<std::string, Task> m;
    auto suite = LoadSuite(testing::SourceTree() / "examples/suites/ci-cpu.toml");
    if (suite) {
      for (auto& t : suite->tasks) m[t.id] = t;
    }
    return m;
  }();
  return tasks;
}

// Whether each task of the suites whose source is a file of this tree (not KernelBench data, so
// known everywhere) computes in fp16/bf16, by task id: the precision fixtures' suite
// (tests/fixtures/accuracy/accuracy-cpu.toml) holds the bf16 add+RMSNorm of gpt-oss.
const std::map<std::string, bool>& LowPrecisionTasks() {
  static const std::map<std::string, bool> tasks = [] {
    std::map<std::string, bool> m;
    const fs::path suite = testing::SourceTree() / "tests/fixtures/accuracy/accuracy-cpu.toml";
    toml::table root = toml::parse_file(suite.string());
    const toml::array* all = root["task"].as_array();
    if (all == nullptr) return m;
    for (const auto& node : *all) {
      const toml::table& t = *node.as_table();
      const std::string id = t["id"].value_or(std::string());
      const std::string source = t["source"].value_or(std::string());
      if (id.empty() || source.empty() || source.starts_with("kernelbench:")) continue;
      auto text = ReadFile(suite.parent_path() / source);
      if (text) m[id] = TaskUsesLowPrecision(*text);
    }
    return m;
  }();
  return tasks;
}

TEST(HonestGuardrailTest, EveryHonestCandidatePassesWithoutFindings) {
  const auto candidates = HonestCandidates();
  ASSERT_GE(candidates.size(), 30u) << "honest fixtures not found";
  if (SuiteTasks().empty()) {
    std::printf("note: KernelBench data absent; the hardcoded-shape rule runs without sizes\n");
  }
  for (const auto& h : candidates) {
    GuardrailOptions options;
    auto it = SuiteTasks().find(h.task);
    if (it != SuiteTasks().end()) options.task_dimensions = TaskDimensions(it->second);
    // As the evaluator does: a task that itself computes in bf16/fp16 allows those types.
    if (auto low = LowPrecisionTasks().find(h.task); low != LowPrecisionTasks().end()) {
      options.task_low_precision = low->second;
    }
    auto checked = CheckFile(h.file, h.target, options);
    EXPECT_FALSE(checked.report.rejected())
        << h.file << " on " << h.target << " is honest but was rejected:\n"
        << Describe(checked.report);
    // Not even a flag: flags on honest code would be noise in every verdict.
    EXPECT_TRUE(checked.report.findings.empty())
        << h.file << " on " << h.target << ":\n" << Describe(checked.report);
  }
}

// ---------------------------------------------------------------------------------------------
// The lexer and options.

TEST(GuardrailLexerTest, CommentsAndStringsAreNotCode) {
  const std::string python = R"(import torch
import torch.nn as nn

# torch.relu(x) would be the reference op; threading.Thread too
HELP = "call torch.matmul(a, b) and os.fork() here"


class ModelNew(nn.Module):
    def forward(self, x):
        """Not torch.softmax(x) nor sys.modules."""
        return torch.empty_like(x)
)";
  auto report = CheckCandidate(python, ProgrammingModel::kTriton, CandidateKind::kModule, {});
  EXPECT_TRUE(report.findings.empty()) << Describe(report);

  const std::string cpp = R"(#include "kforge_kernel.h"
// std::thread t; cudaStreamCreate(&s); __half h;
/* catch (...) { } pthread_create */
static const char* kDoc = "std::thread and fork() and __float2half";
extern "C" int kforge_forward(const kforge_tensor*, int, kforge_tensor*, int, void*) {
  const int half = 3;  // a variable named half is no fp16
  return half - 3;
}
)";
  report = CheckCandidate(cpp, ProgrammingModel::kCpp, CandidateKind::kNative, {});
  EXPECT_TRUE(report.findings.empty()) << Describe(report);
}

TEST(GuardrailLexerTest, OpenClSourceIsScannedAsCodeAtItsOwnLines) {
  const std::string source = "import numpy as np\n"            // 1
                             "SOURCE = r\"\"\"\n"              // 2
                             "// half in a comment\n"          // 3
                             "__kernel void f(__global half* y) {\n"  // 4
                             "}\n"
                             "\"\"\"\n";
  auto report = CheckCandidate(source, ProgrammingModel::kOpenCl, CandidateKind::kOpenCl, {});
  ASSERT_EQ(report.findings.size(), 1u) << Describe(report);
  EXPECT_EQ(report.findings[0].rule, "precision-downcast");
  EXPECT_EQ(report.findings[0].line, 4);
  // A flag: the accuracy check against the float64 truth settles precision.
  EXPECT_EQ(report.findings[0].severity, GuardrailSeverity::kFlag);
}

TEST(GuardrailOptionsTest, ReferenceOpsAllowedWhenTheTargetAllowsThem) {
  const std::string python =
      "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
      "        return torch.relu(x)\n";
  auto report = CheckCandidate(python, ProgrammingModel::kTriton, CandidateKind::kModule, {});
  ASSERT_TRUE(report.rejected());
  EXPECT_EQ(report.findings[0].rule, "reference-op-call");
  EXPECT_EQ(report.findings[0].line, 4);
  EXPECT_NE(report.findings[0].message.find("torch.relu("), std::string::npos);
  GuardrailOptions allow;
  allow.allow_reference_ops = true;
  report = CheckCandidate(python, ProgrammingModel::kTriton, CandidateKind::kModule, allow);
  EXPECT_TRUE(report.findings.empty()) << Describe(report);
}

TEST(GuardrailOptionsTest, PrecisionFollowsThePolicy) {
  const std::string python =
      "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
      "        y = torch.empty_like(x)\n        k[(1,)](x.half(), y)\n        return y\n";
  GuardrailOptions options;
  auto strict = CheckCandidate(python, ProgrammingModel::kTriton, CandidateKind::kModule, options);
  // Flagged, not rejected: split precision that meets strict must reach the accuracy check.
  EXPECT_FALSE(strict.rejected()) << Describe(strict);
  EXPECT_TRUE(HasFinding(strict, "precision-downcast", GuardrailSeverity::kFlag))
      << Describe(strict);
  options.policy = PrecisionPolicy::kTf32;
  auto tf32 = CheckCandidate(python, ProgrammingModel::kTriton, CandidateKind::kModule, options);
  EXPECT_FALSE(tf32.rejected()) << Describe(tf32);
  EXPECT_TRUE(HasFinding(tf32, "precision-downcast", GuardrailSeverity::kFlag)) << Describe(tf32);
  options.policy = PrecisionPolicy::kMixed;
  auto mixed = CheckCandidate(python, ProgrammingModel::kTriton, CandidateKind::kModule, options);
  EXPECT_TRUE(mixed.findings.empty()) << Describe(mixed);
  options.policy = PrecisionPolicy::kStrict;
  options.task_low_precision = true;
  auto low = CheckCandidate(python, ProgrammingModel::kTriton, CandidateKind::kModule, options);
  EXPECT_TRUE(low.findings.empty()) << Describe(low);
}

TEST(GuardrailOptionsTest, TaskDimensionsComeFromGlobalsAndOverrides) {
  Task task;
  task.source = "import torch\nbatch_size = 16\ndim = 16384\nkernel = 3\n"
                "def get_inputs():\n    n = 999\n    return [torch.rand(batch_size, dim)]\n";
  task.overrides.push_back({"dim", "1024"});
  task.overrides.push_back({"bias_shape", "[250]"});
  EXPECT_EQ(TaskDimensions(task), (std::vector<std::int64_t>{16, 250, 1024}));
  EXPECT_FALSE(TaskUsesLowPrecision(task.source));
  EXPECT_TRUE(TaskUsesLowPrecision("import torch\nx = torch.rand(4, dtype=torch.float16)\n"));
}

TEST(GuardrailOptionsTest, TryAroundImportsAndReRaisingHandlersAreFine) {
  const std::string python = R"(import torch
try:
    import triton
except ImportError:
    triton = None


class ModelNew(torch.nn.Module):
    def forward(self, x):
        try:
            y = torch.empty_like(x)
        except RuntimeError:
            raise
        return y
)";
  auto report = CheckCandidate(python, ProgrammingModel::kTriton, CandidateKind::kModule, {});
  EXPECT_TRUE(report.findings.empty()) << Describe(report);
}

}  // namespace
}  // namespace kforge
