#include "kforge/store/run_store.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>

#include <ctime>
#include <mutex>
#include <random>
#include <utility>

#include "kforge/core/files.h"
#include "kforge/store/artifact_store.h"
#include "schema.h"
#include "sqlite_statement.h"

namespace kforge::store {

namespace fs = std::filesystem;
using internal::Statement;

namespace {

// --- IDs and times -----------------------------------------------------------------------------

// `digits` random lowercase hex digits from the OS's entropy source (fresh in every process, so a
// forked child never repeats its parent's ids).
std::string RandomHex(int digits) {
  std::random_device device;
  std::string out;
  while (static_cast<int>(out.size()) < digits) {
    out += fmt::format("{:08x}", static_cast<std::uint32_t>(device()));
  }
  out.resize(static_cast<std::size_t>(digits));
  return out;
}

// "<kind>-<yyyymmdd>-<hhmmss>-<6 hex>" (UTC): sorts by start time, readable in a shell, unique
// across processes without coordination.
std::string NewRunId(RunKind kind, Timestamp created_at) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(created_at);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{}-{:%Y%m%d-%H%M%S}-{}", ToString(kind), utc, RandomHex(6));
}

// "<prefix>-<16 hex>": 64 random bits, so ids made by several processes never need coordinating.
std::string NewId(std::string_view prefix) { return fmt::format("{}-{}", prefix, RandomHex(16)); }

std::int64_t Ms(Timestamp t) { return t.time_since_epoch().count(); }
Timestamp FromMs(std::int64_t ms) { return Timestamp(std::chrono::milliseconds(ms)); }

template <typename R>
void Stamp(R& record, std::string_view id_prefix) {
  if (record.id.empty()) record.id = NewId(id_prefix);
  if (record.created_at == Timestamp{}) record.created_at = Now();
}

// --- Columns and row readers -------------------------------------------------------------------
// Each reader reads its table's columns, in the order of its k*Columns list, starting at `c`.

constexpr std::string_view kRunColumns =
    "id, kind, created_at, command_line, config_json, status, finished_at";
constexpr std::string_view kTaskColumns =
    "id, run_id, name, source_hash, metadata_json, created_at";
constexpr std::string_view kCandidateColumns =
    "id, run_id, task_id, parent_id, llm_call_id, sample, iteration, pass_kind, target, "
    "source_hash, created_at";
constexpr std::string_view kEvaluationColumns =
    "id, run_id, candidate_id, target, device, status, verdict_json, wall_s, created_at";
constexpr std::string_view kLlmCallColumns =
    "id, run_id, agent, model_id, prompt_hash, response_hash, input_tokens, output_tokens, "
    "cost_usd, latency_s, status, request_fingerprint, created_at";
constexpr std::string_view kProfileColumns =
    "id, evaluation_id, tool, raw_hash, summary_hash, created_at";
constexpr std::string_view kRecommendationColumns =
    "id, run_id, candidate_id, llm_call_id, recommendation_json, created_at";

constexpr int ColumnCount(std::string_view columns) {
  int count = 1;
  for (char ch : columns) count += ch == ',' ? 1 : 0;
  return count;
}

// "a, b" with alias "t" -> "t.a, t.b".
std::string Qualified(std::string_view columns, std::string_view alias) {
  std::string out;
  while (!columns.empty()) {
    std::size_t comma = columns.find(',');
    std::string_view column = columns.substr(0, comma);
    while (!column.empty() && column.front() == ' ') column.remove_prefix(1);
    if (!out.empty()) out += ", ";
    out += fmt::format("{}.{}", alias, column);
    columns = comma == std::string_view::npos ? std::string_view() : columns.substr(comma + 1);
  }
  return out;
}


// "?, ?, ?" with one placeholder per column of `columns`.
std::string Placeholders(std::string_view columns) {
  std::string out = "?";
  for (int i = 1; i < ColumnCount(columns); ++i) out += ", ?";
  return out;
}

Result<RunRecord> ReadRun(const Statement& s, int c) {
  RunRecord r;
  r.id = s.Text(c + 0);
  auto kind = ParseRunKind(s.Text(c + 1));
  if (!kind) return std::unexpected(std::move(kind).error());
  r.kind = *kind;
  r.created_at = FromMs(s.Int(c + 2));
  r.command_line = s.Text(c + 3);
  r.config_json = s.Text(c + 4);
  auto status = ParseRunStatus(s.Text(c + 5));
  if (!status) return std::unexpected(std::move(status).error());
  r.status = *status;
  if (!s.IsNull(c + 6)) r.finished_at = FromMs(s.Int(c + 6));
  return r;
}

Result<TaskRecord> ReadTask(const Statement& s, int c) {
  TaskRecord r;
  r.id = s.Text(c + 0);
  r.run_id = s.Text(c + 1);
  r.name = s.Text(c + 2);
  r.source_hash = s.Text(c + 3);
  r.metadata_json = s.Text(c + 4);
  r.created_at = FromMs(s.Int(c + 5));
  return r;
}

Result<CandidateRecord> ReadCandidate(const Statement& s, int c) {
  CandidateRecord r;
  r.id = s.Text(c + 0);
  r.run_id = s.Text(c + 1);
  r.task_id = s.Text(c + 2);
  r.parent_id = s.OptionalText(c + 3);
  r.llm_call_id = s.OptionalText(c + 4);
  r.sample = s.Int(c + 5);
  r.iteration = s.Int(c + 6);
  auto pass_kind = ParsePassKind(s.Text(c + 7));
  if (!pass_kind) return std::unexpected(std::move(pass_kind).error());
  r.pass_kind = *pass_kind;
  r.target = s.Text(c + 8);
  r.source_hash = s.Text(c + 9);
  r.created_at = FromMs(s.Int(c + 10));
  return r;
}

Result<EvaluationRecord> ReadEvaluation(const Statement& s, int c) {
  EvaluationRecord r;
  r.id = s.Text(c + 0);
  r.run_id = s.Text(c + 1);
  r.candidate_id = s.Text(c + 2);
  r.target = s.Text(c + 3);
  r.device = s.Text(c + 4);
  auto status = ParseEvaluationStatus(s.Text(c + 5));
  if (!status) return std::unexpected(std::move(status).error());
  r.status = *status;
  r.verdict_json = s.Text(c + 6);
  r.wall_s = s.Double(c + 7);
  r.created_at = FromMs(s.Int(c + 8));
  return r;
}

Result<LlmCallRecord> ReadLlmCall(const Statement& s, int c) {
  LlmCallRecord r;
  r.id = s.Text(c + 0);
  r.run_id = s.Text(c + 1);
  r.agent = s.Text(c + 2);
  r.model_id = s.Text(c + 3);
  r.prompt_hash = s.Text(c + 4);
  r.response_hash = s.OptionalText(c + 5);
  r.input_tokens = s.Int(c + 6);
  r.output_tokens = s.Int(c + 7);
  r.cost_usd = s.Double(c + 8);
  r.latency_s = s.Double(c + 9);
  auto status = ParseLlmCallStatus(s.Text(c + 10));
  if (!status) return std::unexpected(std::move(status).error());
  r.status = *status;
  r.request_fingerprint = s.Text(c + 11);
  r.created_at = FromMs(s.Int(c + 12));
  return r;
}

Result<ProfileRecord> ReadProfile(const Statement& s, int c) {
  ProfileRecord r;
  r.id = s.Text(c + 0);
  r.evaluation_id = s.Text(c + 1);
  r.tool = s.Text(c + 2);
  r.raw_hash = s.Text(c + 3);
  r.summary_hash = s.Text(c + 4);
  r.created_at = FromMs(s.Int(c + 5));
  return r;
}

Result<RecommendationRecord> ReadRecommendation(const Statement& s, int c) {
  RecommendationRecord r;
  r.id = s.Text(c + 0);
  r.run_id = s.Text(c + 1);
  r.candidate_id = s.Text(c + 2);
  r.llm_call_id = s.OptionalText(c + 3);
  r.recommendation_json = s.Text(c + 4);
  r.created_at = FromMs(s.Int(c + 5));
  return r;
}

Result<std::string> ReadText(const Statement& s, int c) { return s.Text(c); }


Result<EvaluationRow> ReadEvaluationRow(const Statement& s, int c) {
  auto evaluation = ReadEvaluation(s, c);
  if (!evaluation) return std::unexpected(std::move(evaluation).error());
  constexpr int kEvaluationColumnCount = ColumnCount(kEvaluationColumns);
  constexpr int kCandidateColumnCount = ColumnCount(kCandidateColumns);
  auto candidate = ReadCandidate(s, c + kEvaluationColumnCount);
  if (!candidate) return std::unexpected(std::move(candidate).error());
  return EvaluationRow{std::move(*evaluation), std::move(*candidate),
                       s.Text(c + kEvaluationColumnCount + kCandidateColumnCount)};
}

// Prefixes an error with what was being done, keeping its code.
Error Context(Error error, std::string_view what) {
  error.message = fmt::format("{}: {}", what, error.message);
  return error;
}

}  // namespace

// --- Impl ----------------------------------------------------------------------------------------

struct RunStore::Impl {
  Impl(fs::path dir, ArtifactStore artifact_store)
      : run_dir(std::move(dir)), db_path(run_dir / "run.sqlite"),
        artifacts(std::move(artifact_store)) {}
  ~Impl() { sqlite3_close_v2(db); }

  const fs::path run_dir;
  const fs::path db_path;
  ArtifactStore artifacts;  // thread-safe on its own

  std::mutex mu;
  sqlite3* db = nullptr;  // guarded by mu once Open has returned

  // Runs a statement that returns no rows; the number of rows it changed.
  template <typename... Args>
  Result<int> Execute(std::string_view sql, const Args&... args) {
    std::lock_guard<std::mutex> lock(mu);
    auto stmt = Statement::Prepare(db, sql);
    if (!stmt) return std::unexpected(std::move(stmt).error());
    KFORGE_RETURN_IF_ERROR(stmt->BindAll(args...).Run());
    return sqlite3_changes(db);
  }

  template <typename T, typename... Args>
  Result<std::vector<T>> QueryAll(Result<T> (*read)(const Statement&, int), std::string_view sql,
                                  const Args&... args) {
    std::lock_guard<std::mutex> lock(mu);
    auto stmt = Statement::Prepare(db, sql);
    if (!stmt) return std::unexpected(std::move(stmt).error());
    stmt->BindAll(args...);
    std::vector<T> out;
    for (;;) {
      auto row = stmt->Step();
      if (!row) return std::unexpected(std::move(row).error());
      if (!*row) return out;
      auto record = read(*stmt, 0);
      if (!record) return std::unexpected(Context(std::move(record).error(), db_path.string()));
      out.push_back(std::move(*record));
    }
  }

  // Calls `visit` with each row `sql` returns, read by `read`.
  template <typename T, typename... Args>
  Status QueryEach(Result<T> (*read)(const Statement&, int),
                   const std::function<Status(T&)>& visit, std::string_view sql,
                   const Args&... args) {
    std::lock_guard<std::mutex> lock(mu);
    auto stmt = Statement::Prepare(db, sql);
    if (!stmt) return std::unexpected(std::move(stmt).error());
    stmt->BindAll(args...);
    for (;;) {
      auto row = stmt->Step();
      if (!row) return std::unexpected(std::move(row).error());
      if (!*row) return Ok();
      auto record = read(*stmt, 0);
      if (!record) return std::unexpected(Context(std::move(record).error(), db_path.string()));
      KFORGE_RETURN_IF_ERROR(visit(*record));
    }
  }

  // The first row `sql` returns, or nullopt.
  template <typename T, typename... Args>
  Result<std::optional<T>> QueryFirst(Result<T> (*read)(const Statement&, int),
                                      std::string_view sql, const Args&... args) {
    auto rows = QueryAll(read, sql, args...);
    if (!rows) return std::unexpected(std::move(rows).error());
    if (rows->empty()) return std::nullopt;
    return std::move(rows->front());
  }

  template <typename T>
  Result<T> Get(Result<T> (*read)(const Statement&, int), std::string_view table,
                std::string_view columns, const std::string& id) {
    auto row = QueryFirst(read, fmt::format("SELECT {} FROM {} WHERE id = ?", columns, table), id);
    if (!row) return std::unexpected(std::move(row).error());
    if (!*row) return NotFound(fmt::format("no row '{}' in table {} of {}", id, table,
                                           db_path.string()));
    return std::move(**row);
  }

  template <typename R, typename... Args>
  Result<R> Insert(R record, std::string_view table, std::string_view columns,
                   const Args&... values) {
    auto changed = Execute(
        fmt::format("INSERT INTO {} ({}) VALUES ({})", table, columns, Placeholders(columns)),
        values...);
    if (!changed) {
      return std::unexpected(Context(std::move(changed).error(),
                                     fmt::format("adding {} to {} in {}", record.id, table,
                                                 db_path.string())));
    }
    return record;
  }
};

// --- Open ----------------------------------------------------------------------------------------

RunStore::RunStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RunStore::~RunStore() = default;

Result<std::unique_ptr<RunStore>> RunStore::Open(const fs::path& run_dir) {
  return Open(run_dir, Options{});
}

Result<std::unique_ptr<RunStore>> RunStore::Open(const fs::path& run_dir, const Options& options) {
  KFORGE_RETURN_IF_ERROR(MakeDirs(run_dir));
  auto artifacts = ArtifactStore::Open(run_dir / "artifacts");
  if (!artifacts) return std::unexpected(std::move(artifacts).error());
  auto impl = std::make_unique<Impl>(run_dir, std::move(*artifacts));
  const std::string db_name = impl->db_path.string();

  // NOMUTEX: the connection is serialised by Impl::mu.
  int rc = sqlite3_open_v2(db_name.c_str(), &impl->db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    return std::unexpected(
        internal::SqliteError(impl->db, rc, fmt::format("cannot open run store {}", db_name)));
  }
  sqlite3_extended_result_codes(impl->db, 1);
  sqlite3_busy_timeout(impl->db, static_cast<int>(options.busy_timeout.count()));

  auto setup = [&]() -> Status {
    // journal_mode answers with the mode in effect; a file system without shared memory keeps
    // the old mode, and concurrent readers would then block the writer.
    auto mode = impl->QueryFirst(
&ReadText, "PRAGMA journal_mode=WAL");
    if (!mode) return std::unexpected(std::move(mode).error());
    if (mode->value_or("") != "wal") {
      return Unavailable("cannot switch to WAL mode (is the run directory on a network file "
                         "system? put it on a local disk)");
    }
    KFORGE_RETURN_IF_ERROR(internal::Exec(impl->db,
                                          "PRAGMA foreign_keys = ON;"
                                          "PRAGMA synchronous = NORMAL;"));
    if (options.mmap_size > 0) {
      KFORGE_RETURN_IF_ERROR(internal::Exec(
          impl->db, fmt::format("PRAGMA mmap_size = {};", options.mmap_size)));
    }
    return internal::Migrate(impl->db, impl->db_path);
  };
  if (Status status = setup(); !status) {
    Error error = std::move(status).error();
    // Migrate's own messages name the file already.
    if (error.message.find(db_name) == std::string::npos) {
      error = Context(std::move(error), fmt::format("cannot open run store {}", db_name));
    }
    return std::unexpected(std::move(error));
  }
  return std::unique_ptr<RunStore>(new RunStore(std::move(impl)));
}

const fs::path& RunStore::run_dir() const { return impl_->run_dir; }

int RunStore::SchemaVersion() { return internal::kSchemaVersion; }

// --- Artifacts -----------------------------------------------------------------------------------

Result<std::string> RunStore::PutArtifact(std::string_view bytes) {
  return impl_->artifacts.Put(bytes);
}

Result<std::string> RunStore::GetArtifact(const std::string& hash) const {
  return impl_->artifacts.Get(hash);
}

fs::path RunStore::ArtifactPath(const std::string& hash) const {
  return impl_->artifacts.Path(hash);
}

// --- Add -----------------------------------------------------------------------------------------

Result<RunRecord> RunStore::AddRun(RunRecord r) {
  if (r.created_at == Timestamp{}) r.created_at = Now();
  if (r.id.empty()) r.id = NewRunId(r.kind, r.created_at);
  std::optional<std::int64_t> finished_at;
  if (r.finished_at) finished_at = Ms(*r.finished_at);
  return impl_->Insert(r, "runs", kRunColumns, r.id, ToString(r.kind), Ms(r.created_at),
                       r.command_line, r.config_json, ToString(r.status), finished_at);
}

Result<TaskRecord> RunStore::AddTask(TaskRecord r) {
  Stamp(r, "task");
  return impl_->Insert(r, "tasks", kTaskColumns, r.id, r.run_id, r.name, r.source_hash,
                       r.metadata_json, Ms(r.created_at));
}

Result<CandidateRecord> RunStore::AddCandidate(CandidateRecord r) {
  Stamp(r, "cand");
  return impl_->Insert(r, "candidates", kCandidateColumns, r.id, r.run_id, r.task_id, r.parent_id,
                       r.llm_call_id, r.sample, r.iteration, ToString(r.pass_kind), r.target,
                       r.source_hash, Ms(r.created_at));
}

Result<EvaluationRecord> RunStore::AddEvaluation(EvaluationRecord r) {
  Stamp(r, "evl");
  return impl_->Insert(r, "evaluations", kEvaluationColumns, r.id, r.run_id, r.candidate_id,
                       r.target, r.device, ToString(r.status), r.verdict_json, r.wall_s,
                       Ms(r.created_at));
}

Result<LlmCallRecord> RunStore::AddLlmCall(LlmCallRecord r) {
  Stamp(r, "llm");
  return impl_->Insert(r, "llm_calls", kLlmCallColumns, r.id, r.run_id, r.agent, r.model_id,
                       r.prompt_hash, r.response_hash, r.input_tokens, r.output_tokens, r.cost_usd,
                       r.latency_s, ToString(r.status), r.request_fingerprint, Ms(r.created_at));
}

Result<ProfileRecord> RunStore::AddProfile(ProfileRecord r) {
  Stamp(r, "prof");
  return impl_->Insert(r, "profiles", kProfileColumns, r.id, r.evaluation_id, r.tool, r.raw_hash,
                       r.summary_hash, Ms(r.created_at));
}

Result<RecommendationRecord> RunStore::AddRecommendation(RecommendationRecord r) {
  Stamp(r, "rec");
  return impl_->Insert(r, "recommendations", kRecommendationColumns, r.id, r.run_id,
                       r.candidate_id, r.llm_call_id, r.recommendation_json, Ms(r.created_at));
}

Status RunStore::FinishRun(const std::string& run_id, RunStatus status,
                           std::optional<Timestamp> finished_at) {
  auto changed = impl_->Execute("UPDATE runs SET status = ?, finished_at = ? WHERE id = ?",
                                ToString(status), Ms(finished_at.value_or(Now())), run_id);
  if (!changed) {
    return std::unexpected(Context(std::move(changed).error(),
                                   fmt::format("finishing run {} in {}", run_id,
                                               impl_->db_path.string())));
  }
  if (*changed == 0) {
    return NotFound(fmt::format("no run '{}' in {}", run_id, impl_->db_path.string()));
  }
  return Ok();
}

// --- Get -----------------------------------------------------------------------------------------

Result<RunRecord> RunStore::GetRun(const std::string& id) {
  return impl_->Get(&ReadRun, "runs", kRunColumns, id);
}
Result<TaskRecord> RunStore::GetTask(const std::string& id) {
  return impl_->Get(&ReadTask, "tasks", kTaskColumns, id);
}
Result<CandidateRecord> RunStore::GetCandidate(const std::string& id) {
  return impl_->Get(&ReadCandidate, "candidates", kCandidateColumns, id);
}
Result<EvaluationRecord> RunStore::GetEvaluation(const std::string& id) {
  return impl_->Get(&ReadEvaluation, "evaluations", kEvaluationColumns, id);
}
Result<LlmCallRecord> RunStore::GetLlmCall(const std::string& id) {
  return impl_->Get(&ReadLlmCall, "llm_calls", kLlmCallColumns, id);
}
Result<ProfileRecord> RunStore::GetProfile(const std::string& id) {
  return impl_->Get(&ReadProfile, "profiles", kProfileColumns, id);
}
Result<RecommendationRecord> RunStore::GetRecommendation(const std::string& id) {
  return impl_->Get(&ReadRecommendation, "recommendations", kRecommendationColumns, id);
}

// --- Find ----------------------------------------------------------------------------------------

Result<std::optional<TaskRecord>> RunStore::FindTask(const std::string& run_id,
                                                     const std::string& name) {
  return impl_->QueryFirst(
      &ReadTask, fmt::format("SELECT {} FROM tasks WHERE run_id = ? AND name = ?", kTaskColumns),
      run_id, name);
}

Result<std::optional<LlmCallRecord>> RunStore::FindLlmCall(
    const std::string& run_id, const std::string& request_fingerprint) {
  return impl_->QueryFirst(
      &ReadLlmCall,
      fmt::format("SELECT {} FROM llm_calls WHERE run_id = ? AND request_fingerprint = ? "
                  "AND status = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
                  kLlmCallColumns),
      run_id, request_fingerprint, ToString(LlmCallStatus::kOk));
}

Result<std::optional<EvaluationRecord>> RunStore::FindEvaluation(const std::string& candidate_id) {
  return impl_->QueryFirst(
      &ReadEvaluation,
      fmt::format("SELECT {} FROM evaluations WHERE candidate_id = ? "
                  "ORDER BY created_at DESC, rowid DESC LIMIT 1",
                  kEvaluationColumns),
      candidate_id);
}

// --- List ----------------------------------------------------------------------------------------

Result<std::vector<RunRecord>> RunStore::ListRuns() {
  return impl_->QueryAll(
      &ReadRun, fmt::format("SELECT {} FROM runs ORDER BY created_at DESC, rowid DESC", kRunColumns));
}

Result<std::vector<TaskRecord>> RunStore::ListTasks(const std::string& run_id) {
  return impl_->QueryAll(
      &ReadTask,
      fmt::format("SELECT {} FROM tasks WHERE run_id = ? ORDER BY created_at, rowid", kTaskColumns),
      run_id);
}

Result<std::vector<CandidateRecord>> RunStore::ListCandidates(const std::string& run_id) {
  return impl_->QueryAll(&ReadCandidate,
                         fmt::format("SELECT {} FROM candidates WHERE run_id = ? "
                                     "ORDER BY created_at, rowid",
                                     kCandidateColumns),
                         run_id);
}

Result<std::vector<EvaluationRecord>> RunStore::ListEvaluations(const std::string& run_id) {
  return impl_->QueryAll(&ReadEvaluation,
                         fmt::format("SELECT {} FROM evaluations WHERE run_id = ? "
                                     "ORDER BY created_at, rowid",
                                     kEvaluationColumns),
                         run_id);
}

Status RunStore::ForEachEvaluation(const std::string& run_id,
                                   const std::function<Status(EvaluationRecord&)>& visit) {
  return impl_->QueryEach(&ReadEvaluation, visit,
                          fmt::format("SELECT {} FROM evaluations WHERE run_id = ?",
                                      kEvaluationColumns),
                          run_id);
}

Result<std::vector<EvaluationRow>> RunStore::ListEvaluationRows(const std::string& run_id) {
  return impl_->QueryAll(
      &ReadEvaluationRow,
      fmt::format("SELECT {}, {}, t.name FROM evaluations e "
                  "JOIN candidates c ON c.id = e.candidate_id "
                  "JOIN tasks t ON t.id = c.task_id "
                  "WHERE e.run_id = ? ORDER BY e.created_at, e.rowid",
                  Qualified(kEvaluationColumns, "e"), Qualified(kCandidateColumns, "c")),
      run_id);
}

Result<std::vector<EvaluationRow>> RunStore::ListEvaluationRowsOfTask(const std::string& task_id) {
  return impl_->QueryAll(
      &ReadEvaluationRow,
      fmt::format("SELECT {}, {}, t.name FROM candidates c "
                  "JOIN evaluations e ON e.candidate_id = c.id "
                  "JOIN tasks t ON t.id = c.task_id "
                  "WHERE c.task_id = ? ORDER BY e.created_at, e.rowid",
                  Qualified(kEvaluationColumns, "e"), Qualified(kCandidateColumns, "c")),
      task_id);
}

Result<std::vector<LlmCallRecord>> RunStore::ListLlmCalls(const std::string& run_id) {
  return impl_->QueryAll(&ReadLlmCall,
                         fmt::format("SELECT {} FROM llm_calls WHERE run_id = ? "
                                     "ORDER BY created_at, rowid",
                                     kLlmCallColumns),
                         run_id);
}

Result<std::vector<ProfileRecord>> RunStore::ListProfiles(const std::string& evaluation_id) {
  return impl_->QueryAll(&ReadProfile,
                         fmt::format("SELECT {} FROM profiles WHERE evaluation_id = ? "
                                     "ORDER BY created_at, rowid",
                                     kProfileColumns),
                         evaluation_id);
}

Result<std::vector<RecommendationRecord>> RunStore::ListRecommendations(
    const std::string& run_id) {
  return impl_->QueryAll(&ReadRecommendation,
                         fmt::format("SELECT {} FROM recommendations WHERE run_id = ? "
                                     "ORDER BY created_at, rowid",
                                     kRecommendationColumns),
                         run_id);
}

// --- Health --------------------------------------------------------------------------------------

Status RunStore::CheckIntegrity() {
  auto integrity = impl_->QueryAll(&ReadText, "PRAGMA integrity_check");
  if (!integrity) return std::unexpected(std::move(integrity).error());
  auto describe_fk = +[](const Statement& s, int c) -> Result<std::string> {
    return fmt::format("{} row {} refers to a missing row of {}", s.Text(c), s.Int(c + 1),
                       s.Text(c + 2));
  };
  auto foreign_keys = impl_->QueryAll(describe_fk, "PRAGMA foreign_key_check");
  if (!foreign_keys) return std::unexpected(std::move(foreign_keys).error());

  std::vector<std::string> problems;
  if (!(integrity->size() == 1 && integrity->front() == "ok")) {
    problems.insert(problems.end(), integrity->begin(), integrity->end());
  }
  problems.insert(problems.end(), foreign_keys->begin(), foreign_keys->end());
  if (problems.empty()) return Ok();
  return IoError(fmt::format("run store {} is damaged: {}", impl_->db_path.string(),
                             fmt::join(problems, "; ")));
}

}  // namespace kforge::store
