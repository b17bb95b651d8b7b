// The torch.compile baselines, cached per (task, target, runner environment, timing options):
// compiling and autotuning takes seconds to minutes per task, and the figure only changes when the
// task, the device or the libraries change (EVAL-PROTOCOL timing rule 6). Internal to src/eval.
//
// The environment (Python, torch, triton, numpy, device name) is only known once a runner has
// reported it, so the cache also remembers the last environment seen per (target, device,
// runner Python): a lookup uses it, and the evaluator drops cached figures when the reference's
// environment turns out to differ (the libraries changed since).
#ifndef KFORGE_SRC_EVAL_BASELINE_CACHE_H_
#define KFORGE_SRC_EVAL_BASELINE_CACHE_H_

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kforge/eval/timing.h"
#include "kforge/task/task.h"

namespace kforge {

class BaselineCache {
 public:
  // `dir` empty: <cache dir>/baselines (DefaultCompileCacheDir's parent).
  explicit BaselineCache(std::filesystem::path dir = {});

  // The environment JSON last reported for `runner_key`, if any.
  std::optional<std::string> LastEnvironment(const std::string& runner_key) const;
  void SetLastEnvironment(const std::string& runner_key, const std::string& environment_json);

  // Cached runner timing objects (as the runner wrote them) by baseline name.
  std::map<std::string, std::string> Find(const std::string& key) const;
  void Store(const std::string& key, const std::map<std::string, std::string>& timings);

 private:
  std::filesystem::path dir_;
};

// The key of a task's baselines: the task's source and overrides, the target, the runner's
// environment (normalised: only what changes a timing) and the timing options.
std::string BaselineKey(const Task& task, const std::string& target,
                        const std::string& environment_json, const TimingOptions& timing);

// The part of a runner environment a baseline depends on, as canonical JSON.
std::string NormalisedEnvironment(const std::string& environment_json);

}  // namespace kforge

#endif  // KFORGE_SRC_EVAL_BASELINE_CACHE_H_
