#include "fixture_cases.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace kforge::testing {

std::filesystem::path SourceTree() {
  // KFORGE_HOME: the tree was copied elsewhere (a GPU machine) after the build.
  const char* home = std::getenv("KFORGE_HOME");
  return home != nullptr && *home != '\0' ? std::filesystem::path(home)
                                           : std::filesystem::path(KFORGE_SOURCE_HOME);
}

std::vector<FixtureCase> LoadFixtureCases(const std::vector<std::string>& wheres) {
  std::vector<FixtureCase> cases;
  toml::table root;
  try {
    root = toml::parse_file((SourceTree() / "tests/fixtures/expectations.toml").string());
  } catch (const toml::parse_error& e) {
    std::fprintf(stderr, "expectations.toml: %s\n", std::string(e.description()).c_str());
    std::abort();
  }
  const toml::array* all = root["case"].as_array();
  if (all == nullptr) std::abort();
  for (const auto& node : *all) {
    const toml::table& t = *node.as_table();
    FixtureCase c;
    c.suite = t["suite"].value_or(std::string());
    c.task = t["task"].value_or(std::string());
    c.candidate = t["candidate"].value_or(std::string());
    c.target = t["target"].value_or(std::string());
    c.expect = t["expect"].value_or(std::string());
    c.where = t["where"].value_or(std::string());
    c.why = t["why"].value_or(std::string());
    c.first_error = t["first_error"].value_or(std::string());
    if (std::find(wheres.begin(), wheres.end(), c.where) == wheres.end()) continue;
    std::string stem = std::filesystem::path(c.candidate).filename().string();
    c.name = c.task + "_" + stem + "_" + c.target;
    std::replace_if(c.name.begin(), c.name.end(), [](char ch) { return !std::isalnum(ch); }, '_');
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace kforge::testing
