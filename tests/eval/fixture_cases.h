// The candidate fixtures of tests/fixtures/expectations.toml as test parameters.
#ifndef KFORGE_TESTS_EVAL_FIXTURE_CASES_H_
#define KFORGE_TESTS_EVAL_FIXTURE_CASES_H_

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace kforge::testing {

struct FixtureCase {
  std::string suite;      // manifest path, relative to the source tree
  std::string task;       // task id in the suite
  std::string candidate;  // path relative to the source tree
  std::string target;
  std::string expect;     // evaluation status name
  std::string where;      // ci, h200, compile
  std::string why;
  std::string first_error;
  std::string name;       // a gtest-safe name
  // The red-team manifest's fields (tests/fixtures/redteam/dynamic.toml).
  std::string loophole;
  bool guardrails = true;  // false: the static guardrails are off for this case
  std::string policy;      // forced precision policy, or empty
  std::string rule;        // static guardrail rule id the verdict must name
  std::string reason;      // text the verdict's message or diagnostics must contain
  bool time = false;       // the evaluation times the candidate (EvalOptions::time)
  // The precision and shortcut manifest's fields (tests/fixtures/accuracy/accuracy.toml).
  std::string failing_trial;        // a failed trial must have this distribution
  std::optional<bool> degenerate;   // the verdict must (not) flag the task degenerate
};

// The manifest files (relative to the source tree) of the candidate fixtures.
inline constexpr const char* kExpectationsManifest = "tests/fixtures/expectations.toml";
inline constexpr const char* kRedTeamManifest = "tests/fixtures/redteam/dynamic.toml";
inline constexpr const char* kAccuracyManifest = "tests/fixtures/accuracy/accuracy.toml";

// Cases of `manifests` whose `where` is in `wheres`; aborts the test binary on a malformed file.
std::vector<FixtureCase> LoadFixtureCases(const std::vector<std::string>& wheres,
                                          const std::vector<std::string>& manifests = {
                                              kExpectationsManifest});

std::filesystem::path SourceTree();

// gtest prints a parameter with this instead of its bytes.
inline void PrintTo(const FixtureCase& c, std::ostream* os) {
  *os << c.candidate << " on " << c.target << " (expect " << c.expect << ")";
}

}  // namespace kforge::testing

#endif  // KFORGE_TESTS_EVAL_FIXTURE_CASES_H_
