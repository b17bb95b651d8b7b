// Tasks (a PyTorch reference computation in KernelBench format) and suites (named lists of tasks).
//
// A task is given as one of:
//   path/to/problem.py            a KernelBench problem file (Model, get_inputs, get_init_inputs)
//   path/to/dataset.jsonl#N       the entry with problem_id N of a KernelBench-format JSONL file
//   kernelbench:levelL#N          the same, from the KernelBench data directory: $KFORGE_KERNELBENCH_DIR,
//                                 else ../shared/data/kernelbench beside KForge's home
// A suite is a TOML manifest (see examples/suites/) or a JSONL dataset (every entry).
#ifndef KFORGE_TASK_TASK_H_
#define KFORGE_TASK_TASK_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.h"

namespace kforge {

// Numeric tolerance regime (EVAL-PROTOCOL, correctness rule 3). Stored as its name; never renamed.
enum class PrecisionPolicy { kStrict, kTf32, kMixed };
std::string_view PrecisionPolicyName(PrecisionPolicy policy);
Result<PrecisionPolicy> ParsePrecisionPolicy(std::string_view name);

struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
};
// strict: 1e-4, tf32: 1e-3, mixed: 1e-2.
Tolerance ToleranceOf(PrecisionPolicy policy);

// A module-level global of the task source replaced before get_inputs() runs (reduced sizes).
struct Override {
  std::string name;
  std::string value_json;  // the new value as JSON: 16, 0.5, "x", [250]
};

struct Task {
  std::string id;        // short handle: the suite's id, else derived from the name
  std::string name;      // e.g. "19_ReLU"
  std::string origin;    // where it came from: a path, "level1.jsonl#19"
  int level = 0;         // KernelBench level, 0 if not from KernelBench
  int problem_id = 0;    // KernelBench problem id, 0 if none
  std::string source;    // the Python source
  std::vector<Override> overrides;
  PrecisionPolicy policy = PrecisionPolicy::kStrict;
};

struct Suite {
  std::string name;
  std::string description;
  std::vector<Task> tasks;
};

// Loads one task from the spec forms above. `base_dir` resolves relative paths.
Result<Task> LoadTask(std::string_view spec, const std::filesystem::path& base_dir = {});

// Loads a suite manifest (.toml) or a whole JSONL dataset (.jsonl).
Result<Suite> LoadSuite(const std::filesystem::path& path);

// Checks that `source` looks like a KernelBench problem (defines Model, get_inputs,
// get_init_inputs); the error names `origin` and what is missing.
Status ValidateTaskSource(std::string_view source, std::string_view origin);

// The module-level names a task source assigns (`batch_size = 16`, `a, b = 1, 2`, `x: int = 3`,
// also inside top-level if/try/with/for blocks, never inside a def or class): the globals an
// override may replace. A static scan of the text, so that a misspelled override is reported
// before any runner starts; the runner checks again when it applies them.
std::vector<std::string> ModuleGlobals(std::string_view source);

// Checks that every override of `task` names one of ModuleGlobals(task.source); the error names
// the override, the task and the nearest global ("did you mean 'batch_size'?").
Status CheckOverrides(const Task& task);

// Parses command-line overrides (`--set NAME=VALUE`; VALUE is JSON, and a bare word is a string)
// onto `task`, then CheckOverrides(). Errors name the argument and how to write it.
Status AddOverrides(Task& task, const std::vector<std::string>& name_equals_value);

// The KernelBench data directory used for "kernelbench:" specs.
std::filesystem::path KernelBenchDir();

}  // namespace kforge

#endif  // KFORGE_TASK_TASK_H_
