// The module direction of docs/ARCHITECTURE.md, checked against the code: every
// `#include "kforge/<module>/..."` in src/<m>/ and include/kforge/<m>/ must name <m> itself or a
// module the table between the `include-direction` markers lets <m> include. A module the table
// does not list fails too, so a new module is placed in the direction before it lands.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace kforge {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = KFORGE_SOURCE_HOME;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// module -> the modules it may include, from the table of docs/ARCHITECTURE.md.
std::map<std::string, std::set<std::string>> AllowedIncludes() {
  const std::string doc = ReadAll(kSource / "docs" / "ARCHITECTURE.md");
  const auto begin = doc.find("<!-- include-direction");
  const auto end = doc.find("<!-- /include-direction -->");
  EXPECT_NE(begin, std::string::npos) << "docs/ARCHITECTURE.md has no include-direction table";
  EXPECT_NE(end, std::string::npos);
  std::map<std::string, std::set<std::string>> allowed;
  if (begin == std::string::npos || end == std::string::npos) return allowed;
  std::istringstream lines(doc.substr(begin, end - begin));
  const std::regex row(R"(^\|\s*`([a-z0-9_]+)`\s*\|(.*)\|\s*$)");
  const std::regex name(R"(`([a-z0-9_]+)`)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    std::set<std::string>& deps = allowed[m[1].str()];
    const std::string cell = m[2].str();
    for (auto it = std::sregex_iterator(cell.begin(), cell.end(), name);
         it != std::sregex_iterator(); ++it) {
      deps.insert((*it)[1].str());
    }
  }
  return allowed;
}

TEST(IncludeDirection, EveryIncludeFollowsTheModuleDirection) {
  const auto allowed = AllowedIncludes();
  ASSERT_FALSE(allowed.empty());
  const std::regex include(R"re(^\s*#\s*include\s+"kforge/([a-z0-9_]+)/)re");
  std::vector<std::string> violations;
  std::set<std::string> modules;
  for (const fs::path& root : {kSource / "src", kSource / "include" / "kforge"}) {
    for (const auto& dir : fs::directory_iterator(root)) {
      if (!dir.is_directory()) continue;
      const std::string module = dir.path().filename().string();
      modules.insert(module);
      auto rules = allowed.find(module);
      if (rules == allowed.end()) {
        violations.push_back(module + ": not in docs/ARCHITECTURE.md's include-direction table");
        continue;
      }
      for (const auto& file : fs::recursive_directory_iterator(dir.path())) {
        const std::string ext = file.path().extension().string();
        if (!file.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
        std::ifstream in(file.path());
        int number = 0;
        for (std::string line; std::getline(in, line);) {
          ++number;
          std::smatch m;
          if (!std::regex_search(line, m, include)) continue;
          const std::string to = m[1].str();
          if (to == module || rules->second.contains(to)) continue;
          violations.push_back(fs::relative(file.path(), kSource).string() + ":" +
                               std::to_string(number) + ": " + module + " includes kforge/" + to +
                               "/, against the direction of docs/ARCHITECTURE.md");
        }
      }
    }
  }
  for (const auto& v : violations) ADD_FAILURE() << v;
  EXPECT_GE(modules.size(), 10u);  // the scan found the tree
}

}  // namespace
}  // namespace kforge
