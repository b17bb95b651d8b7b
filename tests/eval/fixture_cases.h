// The candidate fixtures of tests/fixtures/expectations.toml as test parameters.
#ifndef KFORGE_TESTS_EVAL_FIXTURE_CASES_H_
#define KFORGE_TESTS_EVAL_FIXTURE_CASES_H_

#include <filesystem>
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
};

// Cases whose `where` is in `wheres`; aborts the test binary on a malformed file.
std::vector<FixtureCase> LoadFixtureCases(const std::vector<std::string>& wheres);

std::filesystem::path SourceTree();

// gtest prints a parameter with this instead of its bytes.
inline void PrintTo(const FixtureCase& c, std::ostream* os) {
  *os << c.candidate << " on " << c.target << " (expect " << c.expect << ")";
}

}  // namespace kforge::testing

#endif  // KFORGE_TESTS_EVAL_FIXTURE_CASES_H_
