// SlurmExecutor: runs the elements of a bench (one task's whole synthesis loop each) as a Slurm
// job array, watches them, and resubmits the ones that failed or were lost.
//
// Why whole per-task loops and not single evaluations: a loop's steps depend on each other (the
// next prompt needs the last verdict), so per-evaluation jobs would put the scheduler's latency
// (seconds to minutes) between every two steps and start cold runners each time; one job per task
// keeps its runners warm and its conversation local.
//
// Each element runs `kforge bench-task RUN_DIR INDEX` on a node, which writes its own run store
// under <work_dir>/tasks/<INDEX>/ and, when its loop has ended, the marker
// <work_dir>/tasks/<INDEX>/exit.json ({"status": "done"|"interrupted"}). The caller merges
// finished elements into the bench's store (exec/store_merge.h). An element that leaves the queue
// without a marker failed or was lost (node failure, time limit, OOM, cancelled): its state is
// taken from sacct (or scontrol) for the message, and it is resubmitted, at most
// `max_resubmits` times; a resubmitted element resumes its own store.
//
// Requirements (docs/bench.md): sbatch, squeue and scancel on PATH; the run directory and the
// kforge binary on a filesystem every node sees at the same path.
#ifndef KFORGE_EXEC_SLURM_EXECUTOR_H_
#define KFORGE_EXEC_SLURM_EXECUTOR_H_

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "kforge/core/error.h"

namespace kforge::exec {

struct CommandOutcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs a command (argv[0] from PATH) to its end. The seam tests replace with a fake cluster.
using CommandRunner = std::function<Result<CommandOutcome>(const std::vector<std::string>& argv)>;
CommandRunner SystemCommandRunner();

struct SlurmOptions {
  std::filesystem::path work_dir;  // <run_dir>/slurm: job script, logs, element stores
  // The command of element $SLURM_ARRAY_TASK_ID, which the script appends as the last argument.
  std::vector<std::string> element_argv;
  std::string job_name = "kforge-bench";
  std::string partition;  // empty: the cluster's default
  int gpus_per_element = 0;  // > 0: --gres=gpu:N (GPU targets); 0: no GPU requested
  int cpus_per_element = 2;
  std::string time_limit;  // --time, e.g. "02:00:00"; empty: the partition's default
  std::vector<std::string> extra_sbatch_args;
  int max_resubmits = 2;
  std::chrono::milliseconds poll_interval{2000};
};

enum class ElementEnd { kDone, kInterrupted, kLost };

struct ElementResult {
  int index = 0;
  ElementEnd end = ElementEnd::kLost;
  int submissions = 0;
  std::string last_state;  // the scheduler's state of its last job ("COMPLETED", "NODE_FAIL", ...)
};

class SlurmExecutor {
 public:
  SlurmExecutor(SlurmOptions options, CommandRunner run = SystemCommandRunner());

  // Submits `indices` as one array, then watches the queue until every element has ended (done,
  // interrupted, or lost after its resubmissions). `on_end(index, end)` is called as each ends
  // (from the calling thread). When `stop` is requested the jobs still queued or running are
  // cancelled (scancel) and Run returns with those elements not in the result.
  // Errors: the cluster refused the submission (the message quotes sbatch and names the likely
  // fix), or a command of Slurm is missing.
  Result<std::vector<ElementResult>> Run(const std::vector<int>& indices,
                                         const std::function<void(int, ElementEnd)>& on_end,
                                         std::stop_token stop = {});

  // The marker path of element `index`.
  std::filesystem::path MarkerPath(int index) const;
  std::filesystem::path ElementDir(int index) const;

 private:
  Result<std::string> Submit(const std::vector<int>& indices);
  // Active elements of job `job_id` (index -> state) from squeue.
  Result<std::map<int, std::string>> Active(const std::string& job_id);
  // The final state of element `index` of job `job_id` from sacct, else scontrol; "UNKNOWN".
  std::string FinalState(const std::string& job_id, int index);
  std::optional<ElementEnd> ReadMarker(int index) const;

  SlurmOptions options_;
  CommandRunner run_;
};

// Explains an sbatch refusal: its text, and the fix for the common causes.
std::string ExplainSbatchError(const std::string& sbatch_stderr);

}  // namespace kforge::exec

#endif  // KFORGE_EXEC_SLURM_EXECUTOR_H_
