// Reading fixture files in the profile tests.
#ifndef KFORGE_TESTS_PROFILE_TEST_FILES_H_
#define KFORGE_TESTS_PROFILE_TEST_FILES_H_

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kforge::profile {

inline const std::filesystem::path kFixtures =
    std::filesystem::path(KFORGE_SOURCE_HOME) / "tests" / "profile" / "fixtures";

inline std::string Slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace kforge::profile

#endif  // KFORGE_TESTS_PROFILE_TEST_FILES_H_
