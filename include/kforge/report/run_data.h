// One stored run, read from its run directory into typed values for metrics and reports.
//
// Reading is read-only use of the run store (docs/store.md): rows through RunStore's lists,
// verdicts parsed into VerdictSummary. Artifacts (sources, profile summaries) are not loaded here;
// the HTML writer reads the ones it shows, task by task.
#ifndef KFORGE_REPORT_RUN_DATA_H_
#define KFORGE_REPORT_RUN_DATA_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/report/verdict_summary.h"
#include "kforge/store/records.h"
#include "kforge/store/run_store.h"

namespace kforge::report {

// A candidate with its latest evaluation (a candidate may be evaluated several times; the most
// recent evaluation is its outcome, as for resume). `evaluation` is empty for a candidate that was
// recorded but never evaluated (a run stopped between the two).
struct CandidateData {
  store::CandidateRecord record;
  std::optional<store::EvaluationRecord> evaluation;  // verdict_json cleared after parsing
  VerdictSummary verdict;                             // empty when not evaluated
  int evaluations = 0;                                // how many evaluations it had
  std::vector<std::string> recommendations;           // recommendation_json of advice about it
};

struct TaskData {
  store::TaskRecord record;
  std::string origin;  // from metadata_json
  std::string policy;  // from metadata_json ("strict", "tf32", "mixed"); may be empty
  // Arithmetic intensity (FLOPs per byte) when the task's metadata states `flops` and `bytes`
  // (or `min_bytes`); unset otherwise.
  std::optional<double> arithmetic_intensity;
  std::vector<CandidateData> candidates;  // by sample, then iteration, then creation
  // LLM usage attributed to the task: calls that produced its candidates or advice about them.
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  double cost_usd = 0;
};

struct RunData {
  std::filesystem::path run_dir;
  store::RunRecord run;
  std::string model;   // config_json "model", when stated
  std::string target;  // config_json "target", when stated
  std::vector<TaskData> tasks;  // by name
  // Usage of every LLM call of the run (all statuses), and what no task could be credited with.
  std::int64_t llm_calls = 0;
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  double cost_usd = 0;
  std::int64_t unattributed_input_tokens = 0;
  std::int64_t unattributed_output_tokens = 0;
  double unattributed_cost_usd = 0;
  std::int64_t unparsable_verdicts = 0;  // verdicts that were not JSON objects (shown as such)
};

// A run directory opened for reading. `OpenRunForReading` refuses a path that is not a run
// directory (no run.sqlite in it) instead of creating one, the check `kforge resume` makes.
struct OpenedRun {
  std::filesystem::path run_dir;
  std::unique_ptr<store::RunStore> store;
  store::RunRecord run;
};

// Opens `path` (a run directory, or its run.sqlite) and picks run `run_id`, or, when `run_id` is
// empty, the store's newest run. kInvalidArgument naming the path for anything that is not a run
// directory; kNotFound naming the ids present for an unknown run id.
Result<OpenedRun> OpenRunForReading(const std::filesystem::path& path, const std::string& run_id);

// Loads run `opened.run` from its store. `threads` parses verdicts in parallel (0: one per core).
Result<RunData> LoadRunData(const OpenedRun& opened, unsigned threads = 0);

}  // namespace kforge::report

#endif  // KFORGE_REPORT_RUN_DATA_H_
