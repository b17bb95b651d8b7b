// RunConfig: the one configuration of a `kforge run`, `kforge bench` or `kforge e2e` run — its
// command line resolved (paths made absolute) — stored as the run row's config_json and read by
// every `kforge resume` (and by each Slurm array element of a bench). Versioned and documented in
// docs/store.md ("Run configuration"); FromJson also reads the earlier forms (version 1 of run and
// bench, the unversioned e2e form).
//
// A value type; thread-compatible.
#ifndef KFORGE_APP_RUN_CONFIG_H_
#define KFORGE_APP_RUN_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/store/records.h"

namespace kforge::app {

// Where a run's LLM answers come from and go to.
struct ModelSource {
  std::string model;                   // generation model id (registry) — required
  std::string analysis_model;          // empty: the generation model
  std::vector<std::string> models;     // extra registry files
  std::string record;                  // cassette to record into; empty: none
  std::string record_note;             // who answered the recorded calls (the cassette's header)
  std::string replay;                  // cassette to replay; empty: the registry's models
  std::string replay_match = "exact";  // exact | numbers (llm::ReplayMatch)
  bool inbox_wait = false;             // inbox models wait for each answer file
};

// The Slurm executor's settings of a bench.
struct SlurmConfig {
  std::string partition;
  int gpus_per_task = -1;  // -1: 1 for accelerator targets, 0 for CPU targets
  int cpus_per_task = 2;
  int max_resubmits = 2;
  std::string time_limit;
  std::vector<std::string> sbatch_args;
  int poll_ms = 2000;
};

// The end-to-end settings of an e2e run.
struct E2eConfig {
  std::string model_file;  // absolute
  std::string config = "tiny";
  int top = 3;
  std::vector<std::string> sites;
  int seed = 0;
  int warmup_steps = 3;
  int timed_steps = 20;
  int kernel_repeats = 50;
  int phase_timeout_s = 1800;
};

struct RunConfig {
  // Version 2: one form for every kind. Version 1: `kforge run`'s and `kforge bench`'s own forms.
  static constexpr int kVersion = 2;

  store::RunKind kind = store::RunKind::kRun;
  std::string target;  // vendor[-device]/model
  std::string task;    // run: SUITE.toml#ID, PROBLEM.py, DATASET.jsonl#N, kernelbench:...
  std::string suite;   // bench: a TOML manifest or a KernelBench JSONL file
  ModelSource models;
  int iterations = 5;  // per sample (and task)
  int samples = 1;
  bool profile = true;           // a profile pass before each analysis, where the target has one
  bool time = true;              // time correct candidates (bench --no-time: correctness only)
  std::string reference_impl;    // run: a working implementation to translate from
  std::string reference_target;  // run: the target it was written for
  std::int64_t max_tokens = 0;   // 0: no limit
  double max_cost = 0;           // US dollars; 0: no limit
  int max_time_s = 0;            // wall time of each loop; 0: no limit
  std::string runs_dir = "kforge-runs";  // run, e2e: where run directories are made
  // bench
  int jobs = 0;                    // tasks in flight; 0: min(tasks, 16)
  int devices = 0;                 // devices used at most; 0: all
  std::string executor = "local";  // local | slurm
  SlurmConfig slurm;
  // e2e
  E2eConfig e2e;

  std::string ToJson() const;
  // Errors (kParse) name `where` and what is wrong; unknown versions are refused.
  static Result<RunConfig> FromJson(const std::string& text, const std::string& where);
};

}  // namespace kforge::app

#endif  // KFORGE_APP_RUN_CONFIG_H_
