// Every candidate fixture through the real harness: compile service, sandboxed Python runner,
// comparison. KFORGE_FIXTURE_WHERE selects the cases ("ci" on CPUs, "h200" on an NVIDIA GPU).
#include <gtest/gtest.h>

#include <cstdlib>
#include <algorithm>
#include <map>

#include "fixture_cases.h"
#include "kforge/eval/evaluator.h"
#include "kforge/eval/trial_plan.h"
#include "kforge/target/backend.h"
#include "kforge/task/task.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using testing::FixtureCase;

// Targets are probed once per binary.
const Availability& AvailabilityOf(const std::string& target) {
  static std::map<std::string, Availability> cache;
  auto it = cache.find(target);
  if (it == cache.end()) {
    it = cache.emplace(target, NewBackend(*Target::Parse(target))->Probe()).first;
  }
  return it->second;
}

Result<Task> TaskOf(const FixtureCase& c) {
  auto suite = LoadSuite(testing::SourceTree() / c.suite);
  if (!suite) return std::unexpected(suite.error());
  for (auto& t : suite->tasks) {
    if (t.id == c.task) return t;
  }
  return NotFound("no task " + c.task + " in " + c.suite);
}

// The containment fixtures (expected crashed, timeout, out_of_memory, sandbox_violation,
// resource_limit) exist to test the sandbox and the runner's limits. The static guardrails would
// stop several of them before they run (fork_bomb.py's os.fork, the torch.relu the hostile
// modules end with), so they run with the static guardrails off; every other case runs with them
// on, as `kforge eval` does.
bool TestsContainment(const FixtureCase& c) {
  return c.expect == "crashed" || c.expect == "timeout" || c.expect == "out_of_memory" ||
         c.expect == "sandbox_violation" || c.expect == "resource_limit";
}

EvalOptions TestOptions(bool static_guardrails = true, const std::string& policy = "",
                        bool time = false) {
  EvalOptions options;
  // Timed cases: the timing checks are under test, not the precision of the figure; a short cap
  // keeps CI fast on a busy machine.
  options.time = time;
  options.timing.max_seconds = 3;
  options.timing.warmup_seconds = 0.05;
  if (!policy.empty()) {
    auto parsed = ParsePrecisionPolicy(policy);
    if (parsed) options.policy = *parsed;
  }
  options.candidate_timeout = std::chrono::seconds(20);  // the endless loop ends here
  options.memory_limit_bytes = 4ull << 30;
  options.static_guardrails = static_guardrails;
  return options;
}

class FixtureTest : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(FixtureTest, VerdictIsTheExpectedOne) {
  const FixtureCase& c = GetParam();
  const Availability& a = AvailabilityOf(c.target);
  if (!a.usable()) {
    std::string missing;
    for (const auto& m : a.missing) missing += "\n  " + m;
    GTEST_SKIP() << c.target << " is not usable here:" << missing;
  }
  auto task = TaskOf(c);
  ASSERT_TRUE(task) << task.error().message;
  auto backend = NewBackend(*Target::Parse(c.target));
  CompileService compiler;
  Evaluator evaluator(
      compiler, TestOptions(/*static_guardrails=*/c.guardrails && !TestsContainment(c), c.policy,
                            c.time));
  Verdict v = evaluator.Evaluate(*task, *backend, testing::SourceTree() / c.candidate);
  EXPECT_EQ(EvalStatusName(v.status), c.expect)
      << c.why << "\n" << v.ToText() << "\n" << v.diagnostics;
  // Red-team cases: rejected or flagged for the reason the exploit exists, not just "not correct".
  std::string said = v.message + "\n" + v.diagnostics;
  for (const auto& f : v.guardrail_flags) said += "\n" + f;
  if (!c.rule.empty()) {
    EXPECT_NE(said.find("[" + c.rule + "]"), std::string::npos)
        << "expected static rule " << c.rule << " (" << c.why << "):\n" << said;
  }
  if (!c.reason.empty()) {
    EXPECT_NE(said.find(c.reason), std::string::npos)
        << "expected the reason '" << c.reason << "' (" << c.why << "):\n" << said;
  }
  if (!c.policy.empty()) {
    EXPECT_EQ(PrecisionPolicyName(v.policy), c.policy);
  }
  if (c.expect == "correct") {
    // Five trials of the task's own distributions, then every shortcut-finding trial, each run
    // or skipped with its reason.
    std::size_t own = 0;
    bool second_distribution = false;
    for (const auto& t : v.trials) {
      own += t.distribution == "task" || t.distribution == "normal" || t.distribution == "uniform";
      second_distribution |= t.distribution == "normal" || t.distribution == "uniform";
    }
    EXPECT_EQ(own, 5u);
    EXPECT_TRUE(second_distribution) << "EVAL-PROTOCOL: one trial uses another distribution";
    EXPECT_EQ(v.trials.size() + v.skipped_trials.size(), 5u + ShortcutDistributions().size())
        << v.ToText();
    for (const auto& s : v.skipped_trials) EXPECT_FALSE(s.reason.empty()) << s.distribution;
    EXPECT_FALSE(v.precision.achieved.empty()) << "a correct verdict says what precision it met";
  }
  if (!c.failing_trial.empty()) {
    bool failed = false;
    for (const auto& t : v.trials) failed |= !t.ok && t.distribution == c.failing_trial;
    EXPECT_TRUE(failed) << "expected the " << c.failing_trial << " trial to fail (" << c.why
                        << "):\n" << v.ToText();
  }
  if (c.degenerate) {
    EXPECT_EQ(v.degenerate.any(), *c.degenerate) << v.degenerate.Describe();
  }
  EXPECT_FALSE(v.message.empty());
  EXPECT_EQ(v.device, backend->RunnerDevice()) << "a verdict names the device it ran on";
}

// KFORGE_FIXTURE_MANIFESTS (comma-separated): which manifests this binary runs (the CPU binaries split them
// between the integration and redteam labels; the GPU binary runs both).
std::vector<std::string> Manifests() {
  std::vector<std::string> out;
  std::string_view rest = KFORGE_FIXTURE_MANIFESTS;
  while (!rest.empty()) {
    std::size_t semi = rest.find(',');
    if (semi != 0) out.emplace_back(rest.substr(0, semi));
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
  }
  return out;
}

std::vector<FixtureCase> SelectedCases() {
  const char* where = std::getenv("KFORGE_FIXTURE_WHERE");
  return testing::LoadFixtureCases({where != nullptr ? where : KFORGE_FIXTURE_DEFAULT_WHERE},
                                   Manifests());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FixtureTest, ::testing::ValuesIn(SelectedCases()),
                         [](const auto& param_info) { return param_info.param.name; });

// Compile-only cases: the compiler really runs; errors come back trimmed, first error first.
class CompileFixtureTest : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(CompileFixtureTest, CompilesOrReportsTheFirstError) {
  const FixtureCase& c = GetParam();
  auto backend = NewBackend(*Target::Parse(c.target));
  const Availability& a = AvailabilityOf(c.target);
  if (!a.toolchain) GTEST_SKIP() << c.target << ": no compiler here";
  CompileServiceOptions options;
  options.cache_dir = fs::temp_directory_path() / "kforge-test-compile-cache";
  CompileService compiler(options);
  auto outcome = compiler.Compile(*backend, testing::SourceTree() / c.candidate);
  ASSERT_TRUE(outcome) << outcome.error().message;
  if (c.expect == "correct") {
    EXPECT_TRUE(outcome->ok) << outcome->full_log;
    return;
  }
  ASSERT_FALSE(outcome->ok);
  EXPECT_NE(outcome->diagnostics.find("error"), std::string::npos) << outcome->diagnostics;
  if (!c.first_error.empty()) {
    EXPECT_NE(outcome->diagnostics.find(c.first_error), std::string::npos)
        << "trimmed diagnostics lost the first error:\n" << outcome->diagnostics;
  }
  auto lines = std::count(outcome->diagnostics.begin(), outcome->diagnostics.end(), '\n');
  EXPECT_LE(lines, 42) << outcome->diagnostics;
  EXPECT_EQ(outcome->diagnostics.find("/kforge-build/"), std::string::npos)
      << "paths are shortened: " << outcome->diagnostics;
  // A second compile of the same source is a cache hit with the same answer.
  auto again = compiler.Compile(*backend, testing::SourceTree() / c.candidate);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->cache_hit);
  EXPECT_EQ(again->diagnostics, outcome->diagnostics);
}

#ifdef KFORGE_FIXTURE_COMPILE_CASES
INSTANTIATE_TEST_SUITE_P(Fixtures, CompileFixtureTest,
                         ::testing::ValuesIn(testing::LoadFixtureCases({"compile"})),
                         [](const auto& param_info) { return param_info.param.name; });
#else
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CompileFixtureTest);
#endif

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

#ifdef KFORGE_FIXTURE_COMPILE_CASES  // the CPU binary only
// Fault containment: every hostile candidate in turn through one Evaluator, then an honest one,
// which must still pass: the orchestrator carries on and nothing leaks into the next evaluation.
TEST(FaultContainmentTest, OrchestratorCarriesOnAfterEveryFault) {
  std::vector<FixtureCase> faults;
  FixtureCase honest;
  for (const auto& c : testing::LoadFixtureCases({"ci"})) {
    if (c.task != "relu") continue;
    if (TestsContainment(c)) {
      faults.push_back(c);
    } else if (c.expect == "correct" && c.target == "cpu/cpp" &&
               c.candidate.ends_with("honest.cpp")) {
      honest = c;
    }
  }
  ASSERT_GE(faults.size(), 6u);
  ASSERT_FALSE(honest.candidate.empty());
  if (!AvailabilityOf("cpu/cpp").usable()) GTEST_SKIP() << "cpu/cpp is not usable here";
  auto task = TaskOf(honest);
  ASSERT_TRUE(task) << task.error().message;
  auto backend = NewBackend(*Target::Parse("cpu/cpp"));
  CompileService compiler;
  // The sandbox is under test here, not the static guardrails (see TestsContainment).
  Evaluator evaluator(compiler, TestOptions(/*static_guardrails=*/false));
  for (const auto& fault : faults) {
    Verdict v = evaluator.Evaluate(*task, *backend, testing::SourceTree() / fault.candidate);
    EXPECT_EQ(EvalStatusName(v.status), fault.expect) << fault.candidate << "\n" << v.ToText();
    Verdict after = evaluator.Evaluate(*task, *backend, testing::SourceTree() / honest.candidate);
    EXPECT_EQ(after.status, EvalStatus::kCorrect)
        << "after " << fault.candidate << ":\n" << after.ToText();
  }
}

#endif

}  // namespace
}  // namespace kforge
