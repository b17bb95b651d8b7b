// Builds small run stores by hand for the report tests, and large synthetic ones for the scale
// test and bench/report_scale.sh: tasks, candidates with sources, evaluations with verdict JSON
// shaped like docs/verdict.md (plus the timing fields the report reads when present).
#ifndef KFORGE_TESTS_REPORT_STORE_BUILDER_H_
#define KFORGE_TESTS_REPORT_STORE_BUILDER_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "kforge/store/run_store.h"

namespace kforge::report::testing {

// What one verdict says. Unset optionals are left out of the JSON (or written as null where
// docs/verdict.md has the field).
struct VerdictSpec {
  std::string status = "correct";
  std::string policy = "strict";
  double atol = 1e-4;
  double rtol = 1e-4;
  bool degenerate = false;
  bool timed = true;
  std::optional<double> candidate_median_s;
  std::optional<double> eager_median_s;
  std::optional<double> speedup_vs_eager;
  // The lead's additions; absent from the JSON unless `new_timing_fields`.
  bool new_timing_fields = false;
  std::optional<double> compile_median_s;
  std::optional<double> speedup_vs_compile;
  std::optional<double> speedup_vs_best_baseline;
  std::optional<double> sol_fraction;
  bool held_for_review = false;
  std::string review_reason;
  std::string message = "ok";
  std::string diagnostics;
  int trials = 5;  // trial entries written (realistic verdict size)
};

std::string VerdictJson(const VerdictSpec& spec);

class StoreBuilder {
 public:
  // Opens (creates) the store in `run_dir` and adds run `run_id` with a fixed start time.
  explicit StoreBuilder(const std::filesystem::path& run_dir, const std::string& run_id = "run-test",
                        const std::string& model = "model-a");

  std::string Task(const std::string& name, const std::string& policy = "strict",
                   const std::string& extra_metadata_json = "{}");
  std::string Candidate(const std::string& task_id, std::int64_t sample, std::int64_t iteration,
                        const std::string& source,
                        const std::optional<std::string>& parent = std::nullopt,
                        const std::optional<std::string>& llm_call = std::nullopt);
  std::string Evaluate(const std::string& candidate_id, const VerdictSpec& spec);
  std::string LlmCall(std::int64_t input_tokens, std::int64_t output_tokens, double cost_usd);
  void Recommend(const std::string& candidate_id, const std::string& json,
                 const std::optional<std::string>& llm_call = std::nullopt);
  void Profile(const std::string& evaluation_id, const std::string& summary);
  void Finish();

  store::RunStore& store() { return *store_; }
  const std::string& run_id() const { return run_id_; }

 private:
  std::string NextId(const char* prefix);

  std::unique_ptr<store::RunStore> store_;
  std::string run_id_;
  std::int64_t counter_ = 0;
  std::int64_t clock_ms_ = 1767225600000;  // 2026-01-01 00:00:00 UTC, one ms per row
};

// A synthetic run of `tasks` × `candidates_per_task` (samples × iterations), deterministic for a
// seed: sources of ~60 lines that change a few lines per iteration, a mix of statuses, speedups,
// SOL fractions, a few degenerate tasks and held candidates, LLM calls per candidate.
struct SyntheticOptions {
  int tasks = 100;
  int samples = 2;
  int iterations = 50;
  std::uint32_t seed = 7;
  // Called every 1,000 candidates with the number written so far (progress for large runs).
  void (*progress)(std::int64_t written, std::int64_t total) = nullptr;
};
void FillSyntheticRun(StoreBuilder& builder, const SyntheticOptions& options);

}  // namespace kforge::report::testing

#endif  // KFORGE_TESTS_REPORT_STORE_BUILDER_H_
