// RunStore: everything one run directory records — runs, tasks, candidates, evaluations, LLM calls,
// profiles and recommendations in SQLite, and their large blobs in a content-addressed folder.
//
// Layout of a run directory (docs/store.md has the schema, table by table):
//   <run_dir>/run.sqlite   SQLite database in WAL mode (plus run.sqlite-wal, run.sqlite-shm)
//   <run_dir>/artifacts/   blobs by content hash, see ArtifactStore
//
// Ownership: a RunStore owns one SQLite connection and is the only code that touches it; records
// are returned by value.
//
// Thread-safety: every method may be called from any number of threads at once. Database work is
// serialised on one connection by a mutex; artifact reads run outside it. Other processes may open
// the same run directory at the same time (a `kforge report` beside a running `kforge run`, workers
// of one run): SQLite's WAL lets readers proceed while one writer writes, and a writer waits for
// another up to Options::busy_timeout before an Add* fails with kUnavailable.
//
// The caller must not use a RunStore in a child process after fork(); the child opens its own.
//
// Durability: each Add*/FinishRun is one transaction, committed when the call returns. With WAL
// and synchronous=NORMAL a killed process loses nothing that was committed; a power loss may lose
// the last few commits but never corrupts the database.
#ifndef KFORGE_STORE_RUN_STORE_H_
#define KFORGE_STORE_RUN_STORE_H_

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/store/records.h"

namespace kforge::store {

class RunStore {
 public:
  struct Options {
    // How long a write waits for another connection's write lock before failing with
    // kUnavailable. Writes are short; 30 s outlasts any healthy writer.
    std::chrono::milliseconds busy_timeout{30000};
    // Bytes of the database file SQLite may read through a memory map (PRAGMA mmap_size). 0,
    // the default, reads through read(2) only; a large read-only scan (kforge report) maps it to
    // save a copy of every page.
    std::int64_t mmap_size = 0;
  };

  // Opens the store in `run_dir`, creating the directory, run.sqlite and artifacts/ as needed, and
  // migrates the schema forward to the version this build writes. Fails, naming the file, for a
  // database written by a newer kforge (a newer schema version) or one that is not a database.
  static Result<std::unique_ptr<RunStore>> Open(const std::filesystem::path& run_dir);
  static Result<std::unique_ptr<RunStore>> Open(const std::filesystem::path& run_dir,
                                                const Options& options);

  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  const std::filesystem::path& run_dir() const;
  // Schema version of this store's database (the version this build writes, once opened).
  static int SchemaVersion();

  // --- Artifacts ---------------------------------------------------------------------------
  // Stores `bytes` (deduplicated, atomic) and returns its content hash.
  Result<std::string> PutArtifact(std::string_view bytes);
  // The bytes of artifact `hash`, checked against the hash. kNotFound when absent.
  Result<std::string> GetArtifact(const std::string& hash) const;
  // Where artifact `hash` lives: <run_dir>/artifacts/<hash[0:2]>/<hash>; empty for a malformed hash.
  std::filesystem::path ArtifactPath(const std::string& hash) const;

  // --- Adding rows ---------------------------------------------------------------------------
  // Each Add* inserts `record` and returns it as stored: an empty id is replaced by a fresh one
  // (see docs/store.md, "IDs"), a default created_at by the current time. A reference to a
  // missing row, a duplicate id or a JSON field that does not parse is kInvalidArgument.
  Result<RunRecord> AddRun(RunRecord record);
  Result<TaskRecord> AddTask(TaskRecord record);
  Result<CandidateRecord> AddCandidate(CandidateRecord record);
  Result<EvaluationRecord> AddEvaluation(EvaluationRecord record);
  Result<LlmCallRecord> AddLlmCall(LlmCallRecord record);
  Result<ProfileRecord> AddProfile(ProfileRecord record);
  Result<RecommendationRecord> AddRecommendation(RecommendationRecord record);

  // Sets the status of run `run_id` and its finished_at (`finished_at`, or now). kNotFound when
  // there is no such run.
  Status FinishRun(const std::string& run_id, RunStatus status,
                   std::optional<Timestamp> finished_at = std::nullopt);

  // --- Reading one row by id (kNotFound when absent) ------------------------------------------
  Result<RunRecord> GetRun(const std::string& id);
  Result<TaskRecord> GetTask(const std::string& id);
  Result<CandidateRecord> GetCandidate(const std::string& id);
  Result<EvaluationRecord> GetEvaluation(const std::string& id);
  Result<LlmCallRecord> GetLlmCall(const std::string& id);
  Result<ProfileRecord> GetProfile(const std::string& id);
  Result<RecommendationRecord> GetRecommendation(const std::string& id);

  // --- Lookups for resume (nullopt when there is none) ----------------------------------------
  // The task of run `run_id` named `name`.
  Result<std::optional<TaskRecord>> FindTask(const std::string& run_id, const std::string& name);
  // The most recent call of run `run_id` with `request_fingerprint` whose status is ok: a finished
  // call that a resumed run reuses instead of paying for again. Failed calls are not returned.
  Result<std::optional<LlmCallRecord>> FindLlmCall(const std::string& run_id,
                                                   const std::string& request_fingerprint);
  // The most recent evaluation of candidate `candidate_id`, whatever its status.
  Result<std::optional<EvaluationRecord>> FindEvaluation(const std::string& candidate_id);

  // --- Lists, oldest first (created_at, then id) -------------------------------------------
  // All runs of this store, newest first.
  Result<std::vector<RunRecord>> ListRuns();
  Result<std::vector<TaskRecord>> ListTasks(const std::string& run_id);
  Result<std::vector<CandidateRecord>> ListCandidates(const std::string& run_id);
  Result<std::vector<EvaluationRecord>> ListEvaluations(const std::string& run_id);
  // Calls `visit` with each evaluation of run `run_id`, one row at a time and in no particular
  // order (no sort: a run's verdicts can be hundreds of MB), so that the caller keeps only what
  // it needs. `visit` may move from the record; it is not used after the call. An error `visit`
  // returns stops the scan and is returned.
  Status ForEachEvaluation(const std::string& run_id,
                           const std::function<Status(EvaluationRecord&)>& visit);
  // The evaluations of run `run_id`, each with its candidate and the name of its task.
  Result<std::vector<EvaluationRow>> ListEvaluationRows(const std::string& run_id);
  // The same for the candidates of task `task_id` only (indexed: cheap in a run of many tasks).
  Result<std::vector<EvaluationRow>> ListEvaluationRowsOfTask(const std::string& task_id);
  Result<std::vector<LlmCallRecord>> ListLlmCalls(const std::string& run_id);
  Result<std::vector<ProfileRecord>> ListProfiles(const std::string& evaluation_id);
  Result<std::vector<RecommendationRecord>> ListRecommendations(const std::string& run_id);

  // --- Health ----------------------------------------------------------------------------------
  // Runs SQLite's integrity_check and foreign_key_check; kIo listing the problems when either
  // finds any.
  Status CheckIntegrity();

 private:
  struct Impl;
  explicit RunStore(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge::store

#endif  // KFORGE_STORE_RUN_STORE_H_
