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

std::vector<FixtureCase> LoadFixtureCases(const std::vector<std::string>& wheres,
                                          const std::vector<std::string>& manifests) {
  std::vector<FixtureCase> cases;
  for (const auto& manifest : manifests) {
  toml::table root;
  try {
    root = toml::parse_file((SourceTree() / manifest).string());
  } catch (const toml::parse_error& e) {
    std::fprintf(stderr, "%s: %s\n", manifest.c_str(), std::string(e.description()).c_str());
    std::abort();
  }
  const toml::array* all = root["case"].as_array();
  if (all == nullptr) std::abort();
  const bool redteam = manifest == kRedTeamManifest;
  const bool accuracy = manifest == kAccuracyManifest;
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
    c.loophole = t["loophole"].value_or(std::string());
    c.guardrails = t["guardrails"].value_or(true);
    c.policy = t["policy"].value_or(std::string());
    c.rule = t["rule"].value_or(std::string());
    c.reason = t["reason"].value_or(std::string());
    c.time = t["time"].value_or(false);
    c.failing_trial = t["failing_trial"].value_or(std::string());
    if (auto d = t["degenerate"].value<bool>()) c.degenerate = *d;
    if (std::find(wheres.begin(), wheres.end(), c.where) == wheres.end()) continue;
    std::string stem = std::filesystem::path(c.candidate).filename().string();
    c.name = std::string(redteam ? "redteam_" : accuracy ? "accuracy_" : "") + c.task + "_" +
             stem + "_" + c.target + (c.guardrails ? "" : "_noguard") +
             (c.policy.empty() ? "" : "_" + c.policy) + (c.time ? "_timed" : "");
    std::replace_if(c.name.begin(), c.name.end(), [](char ch) { return !std::isalnum(ch); }, '_');
    cases.push_back(std::move(c));
  }
  }
  return cases;
}

}  // namespace kforge::testing
