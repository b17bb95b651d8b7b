// A bench on a Slurm cluster: one job-array element per unfinished task of the suite, each a
// `kforge bench-task RUN_DIR INDEX` process running that task into its own store under
// <run_dir>/slurm/tasks/INDEX, merged into the bench's store as each element ends (MergeRun).
// The elements read the bench's configuration from <run_dir>/slurm/bench.json.
//
// Thread-safety: RunSlurmBench runs on the calling thread; its callbacks are called from it.
#ifndef KFORGE_EXEC_SLURM_BENCH_H_
#define KFORGE_EXEC_SLURM_BENCH_H_

#include <cstddef>
#include <filesystem>
#include <functional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/exec/slurm_executor.h"
#include "kforge/store/run_store.h"

namespace kforge::exec {

struct SlurmBenchRequest {
  std::filesystem::path run_dir;  // the bench's run directory (its store is `store`)
  std::string run_id;
  std::string config_json;              // the bench's run configuration (app::RunConfig::ToJson)
  std::vector<std::string> task_names;  // in suite order; element i runs task i
  // The element command without its index, e.g. {"/usr/bin/kforge", "bench-task", RUN_DIR}.
  std::vector<std::string> element_argv;
  SlurmOptions options;  // work_dir and element_argv are set from the fields above
};

struct SlurmBenchOutcome {
  bool interrupted = false;  // an element did not finish, was lost, or could not be merged
  std::size_t elements_run = 0;
};

// Runs the unfinished elements (those without a "done" marker; finished ones are merged again,
// which is idempotent) and merges each into `store` as it ends. `say` gets one progress line at a
// time, `warn` one problem (an element store that cannot be opened or merged).
// Errors: bench.json cannot be written, the cluster refused the submission.
Result<SlurmBenchOutcome> RunSlurmBench(const SlurmBenchRequest& request, store::RunStore& store,
                                        const std::function<void(std::string_view)>& say,
                                        const std::function<void(std::string_view)>& warn,
                                        std::stop_token stop);

// An element's view of its bench: the run configuration and run id from <run_dir>/slurm/bench.json.
struct SlurmBenchElementConfig {
  std::string config_json;
  std::string run_id;
};
Result<SlurmBenchElementConfig> ReadSlurmBenchConfig(const std::filesystem::path& run_dir);

// Where element `index` of the bench in `run_dir` keeps its store.
std::filesystem::path SlurmElementDir(const std::filesystem::path& run_dir, int index);

// The element's end marker (exit.json in its folder), read by RunSlurmBench.
Status WriteSlurmElementMarker(const std::filesystem::path& element_dir, bool done,
                               const std::string& task_name, int correct);

}  // namespace kforge::exec

#endif  // KFORGE_EXEC_SLURM_BENCH_H_
