#include "baseline_cache.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kforge/core/files.h"
#include "kforge/core/hash.h"
#include "kforge/eval/compile_service.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kBaselineCacheVersion = 1;

}  // namespace

BaselineCache::BaselineCache(fs::path dir) : dir_(std::move(dir)) {
  if (dir_.empty()) dir_ = DefaultCompileCacheDir().parent_path() / "baselines";
}

std::optional<std::string> BaselineCache::LastEnvironment(const std::string& runner_key) const {
  auto text = ReadFile(dir_ / fmt::format("environment-{}.json", ContentHash(runner_key)));
  if (!text) return std::nullopt;
  return *text;
}

void BaselineCache::SetLastEnvironment(const std::string& runner_key,
                                       const std::string& environment_json) {
  const std::string normalised = NormalisedEnvironment(environment_json);
  if (LastEnvironment(runner_key) == normalised) return;  // the usual case: nothing changed
  // A cache that cannot be written only costs a re-measurement later.
  (void)MakeDirs(dir_);
  (void)WriteFile(dir_ / fmt::format("environment-{}.json", ContentHash(runner_key)), normalised);
}

std::map<std::string, std::string> BaselineCache::Find(const std::string& key) const {
  std::map<std::string, std::string> out;
  auto text = ReadFile(dir_ / (key + ".json"));
  if (!text) return out;
  const json j = json::parse(*text, nullptr, false);
  if (!j.is_object() || j.value("version", 0) != kBaselineCacheVersion) return out;
  const auto timings = j.find("timings");
  if (timings == j.end() || !timings->is_object()) return out;
  for (auto it = timings->begin(); it != timings->end(); ++it) out[it.key()] = it->dump();
  return out;
}

void BaselineCache::Store(const std::string& key,
                          const std::map<std::string, std::string>& timings) {
  if (timings.empty()) return;  // nothing measured fresh: the stored entry stands
  json stored = {{"version", kBaselineCacheVersion}, {"timings", json::object()}};
  for (const auto& [name, text] : Find(key)) stored["timings"][name] = json::parse(text);
  for (const auto& [name, text] : timings) {
    json t = json::parse(text, nullptr, false);
    if (t.is_object() && !t.contains("error")) stored["timings"][name] = std::move(t);
  }
  (void)MakeDirs(dir_);
  (void)WriteFile(dir_ / (key + ".json"), stored.dump(1));
}

std::string NormalisedEnvironment(const std::string& environment_json) {
  const json e = json::parse(environment_json, nullptr, false);
  json out = json::object();
  if (e.is_object()) {
    for (const char* field : {"python", "torch", "triton", "numpy", "device_name"}) {
      if (e.contains(field)) out[field] = e[field];
    }
  }
  return out.dump();
}

std::string BaselineKey(const Task& task, const std::string& target,
                        const std::string& environment_json, const TimingOptions& timing) {
  json overrides = json::array();
  for (const auto& o : task.overrides) overrides.push_back({o.name, o.value_json});
  const json key = {{"version", kBaselineCacheVersion},
                    {"task_source", task.source},
                    {"overrides", overrides},
                    {"target", target},
                    {"environment", json::parse(NormalisedEnvironment(environment_json))},
                    {"timing",
                     {timing.min_samples, timing.min_seconds, timing.max_seconds,
                      timing.target_rel_std, timing.warmup_seconds}}};
  return ContentHash(key.dump());
}

}  // namespace kforge
