// Typed rows of the run store and the stored enum values.
//
// Each struct is one row of one table of docs/store.md. Enum values are written to the database as
// the lowercase text returned by ToString(); a stored text never changes meaning. Adding a value is
// a schema change (a new schema version), so that an older kforge refuses the store instead of
// meeting a value it cannot read.
//
// Timestamps are UTC with millisecond resolution, stored as Unix epoch milliseconds.
// Artifact hashes are the 32-character hex names of files under the run's artifacts/ folder.
#ifndef KFORGE_STORE_RECORDS_H_
#define KFORGE_STORE_RECORDS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kforge/core/error.h"

namespace kforge::store {

using Timestamp = std::chrono::sys_time<std::chrono::milliseconds>;

// The current time, truncated to milliseconds.
Timestamp Now();

// What started a run. Stored text: "eval", "run", "bench", "e2e".
enum class RunKind { kEval, kRun, kBench, kE2e };

// Stored text: "running", "finished", "failed" (ended by an error), "interrupted" (ended by a
// signal or the user; resumable).
enum class RunStatus { kRunning, kFinished, kFailed, kInterrupted };

// Why a candidate exists. Stored text: "functional" (made to pass correctness), "optimization"
// (made to be faster than a correct parent), "given" (supplied by the user, not generated).
enum class PassKind { kFunctional, kOptimization, kGiven };

// Outcome of one evaluation. Stored as the text in parentheses; a text never changes meaning.
enum class EvaluationStatus {
  kCorrect,           // (correct) matched the reference on every trial
  kMismatch,          // (mismatch) ran, but an output, or an input it modified, disagrees
  kCompileError,      // (compile_error) the compiler, OpenCL build or DSL jit rejected it
  kRuntimeError,      // (runtime_error) raised or returned an error while running
  kCrashed,           // (crashed) killed by a signal: segfault, abort, illegal instruction
  kTimeout,           // (timeout) did not finish within its wall-clock or CPU-time limit
  kOutOfMemory,       // (out_of_memory) exceeded its memory limit
  kSandboxViolation,  // (sandbox_violation) tried the network or to write outside its scratch
                      // (or made its scratch unwritable to the runner)
  kResourceLimit,     // (resource_limit) hit a limit it was given: processes/threads (fork
                      // bombs), descriptors, the scratch quota, the size of /tmp or /dev/shm
  kGuardrail,         // (guardrail) rejected by a static or dynamic guardrail
  kRejected,          // (rejected) a claim failed a plausibility check such as the physics floor
  kReferenceError,    // (reference_error) the task's own reference failed: not the candidate
  kInfraError,        // (infra_error) the harness itself failed: says nothing of the candidate
};

// Outcome of one LLM call. Stored text: "ok", "error", "timeout", "cancelled".
enum class LlmCallStatus { kOk, kError, kTimeout, kCancelled };

std::string_view ToString(RunKind value);
std::string_view ToString(RunStatus value);
std::string_view ToString(PassKind value);
std::string_view ToString(EvaluationStatus value);
std::string_view ToString(LlmCallStatus value);

// Inverse of ToString(); a kParse error naming `text` for anything else.
Result<RunKind> ParseRunKind(std::string_view text);
Result<RunStatus> ParseRunStatus(std::string_view text);
Result<PassKind> ParsePassKind(std::string_view text);
Result<EvaluationStatus> ParseEvaluationStatus(std::string_view text);
Result<LlmCallStatus> ParseLlmCallStatus(std::string_view text);

// In every record, an empty `id` given to RunStore::Add* asks the store to make one, and a
// default (epoch) `created_at` asks it to stamp the current time. JSON fields hold a JSON
// document as text; the store checks that it parses (SQLite's json_valid) and nothing more.

struct RunRecord {
  std::string id;
  RunKind kind = RunKind::kEval;
  Timestamp created_at{};
  std::string command_line;        // the invocation, as the user typed it
  std::string config_json = "{}";  // the resolved configuration
  RunStatus status = RunStatus::kRunning;
  std::optional<Timestamp> finished_at;  // set by RunStore::FinishRun

  bool operator==(const RunRecord&) const = default;
};

// One task of a run. `name` is unique within its run.
struct TaskRecord {
  std::string id;
  std::string run_id;
  std::string name;
  std::string source_hash;           // artifact: the reference source
  std::string metadata_json = "{}";  // dtype policy, tolerances, FLOP/byte counts, ...
  Timestamp created_at{};

  bool operator==(const TaskRecord&) const = default;
};

struct CandidateRecord {
  std::string id;
  std::string run_id;
  std::string task_id;
  std::optional<std::string> parent_id;    // the candidate this one was derived from
  std::optional<std::string> llm_call_id;  // the call whose response holds this candidate
  std::int64_t sample = 0;                 // index among independent samples
  std::int64_t iteration = 0;              // refinement step within its sample
  PassKind pass_kind = PassKind::kFunctional;
  std::string target;       // target string, e.g. "nvidia-h200/cuda"
  std::string source_hash;  // artifact: the candidate's source (one file, or a bundle)
  Timestamp created_at{};

  bool operator==(const CandidateRecord&) const = default;
};

struct EvaluationRecord {
  std::string id;
  std::string run_id;
  std::string candidate_id;
  std::string target;  // target string the candidate was built for
  std::string device;  // the device it ran on, e.g. "cuda:0", "pocl-cpu"
  EvaluationStatus status = EvaluationStatus::kInfraError;
  std::string verdict_json = "{}";  // the runner's result and the orchestrator's checks
  double wall_s = 0.0;              // wall time of the whole evaluation
  Timestamp created_at{};

  bool operator==(const EvaluationRecord&) const = default;
};

struct LlmCallRecord {
  std::string id;
  std::string run_id;
  std::string agent;     // which agent called, e.g. "generation", "analysis"
  std::string model_id;  // registry id of the model
  std::string prompt_hash;                  // artifact: the request as sent
  std::optional<std::string> response_hash;  // artifact: the response; absent when none came
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  double cost_usd = 0.0;
  double latency_s = 0.0;
  LlmCallStatus status = LlmCallStatus::kOk;
  std::string request_fingerprint;  // identifies equal requests; the key for resume and replay
  Timestamp created_at{};

  bool operator==(const LlmCallRecord&) const = default;
};

struct ProfileRecord {
  std::string id;
  std::string evaluation_id;
  std::string tool;          // e.g. "ncu", "torch_profiler", "opencl_events"
  std::string raw_hash;      // artifact: the tool's own output
  std::string summary_hash;  // artifact: the compact summary given to the analysis agent
  Timestamp created_at{};

  bool operator==(const ProfileRecord&) const = default;
};

struct RecommendationRecord {
  std::string id;
  std::string run_id;
  std::string candidate_id;                // the candidate the advice is about
  std::optional<std::string> llm_call_id;  // the analysis call that produced it
  std::string recommendation_json = "{}";
  Timestamp created_at{};

  bool operator==(const RecommendationRecord&) const = default;
};

// One evaluation with the basics of its candidate and task, for reports.
struct EvaluationRow {
  EvaluationRecord evaluation;
  CandidateRecord candidate;
  std::string task_name;

  bool operator==(const EvaluationRow&) const = default;
};

}  // namespace kforge::store

#endif  // KFORGE_STORE_RECORDS_H_
