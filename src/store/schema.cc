#include "schema.h"

#include <fmt/format.h>

#include <array>
#include <string_view>

#include "kforge/store/records.h"
#include "sqlite_statement.h"

namespace kforge::store::internal {
namespace {

// kMigrations[i] takes a database from version i to version i + 1.
constexpr std::string_view kVersion1 = R"sql(
CREATE TABLE runs (
  id           TEXT PRIMARY KEY,
  kind         TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  command_line TEXT NOT NULL,
  config_json  TEXT NOT NULL CHECK (json_valid(config_json)),
  status       TEXT NOT NULL,
  finished_at  INTEGER
);

CREATE TABLE tasks (
  id            TEXT PRIMARY KEY,
  run_id        TEXT NOT NULL REFERENCES runs(id),
  name          TEXT NOT NULL,
  source_hash   TEXT NOT NULL,
  metadata_json TEXT NOT NULL CHECK (json_valid(metadata_json)),
  created_at    INTEGER NOT NULL,
  UNIQUE (run_id, name)
);

CREATE TABLE llm_calls (
  id                  TEXT PRIMARY KEY,
  run_id              TEXT NOT NULL REFERENCES runs(id),
  agent               TEXT NOT NULL,
  model_id            TEXT NOT NULL,
  prompt_hash         TEXT NOT NULL,
  response_hash       TEXT,
  input_tokens        INTEGER NOT NULL,
  output_tokens       INTEGER NOT NULL,
  cost_usd            REAL NOT NULL,
  latency_s           REAL NOT NULL,
  status              TEXT NOT NULL,
  request_fingerprint TEXT NOT NULL,
  created_at          INTEGER NOT NULL
);
CREATE INDEX llm_calls_by_fingerprint ON llm_calls (run_id, request_fingerprint);

CREATE TABLE candidates (
  id          TEXT PRIMARY KEY,
  run_id      TEXT NOT NULL REFERENCES runs(id),
  task_id     TEXT NOT NULL REFERENCES tasks(id),
  parent_id   TEXT REFERENCES candidates(id),
  llm_call_id TEXT REFERENCES llm_calls(id),
  sample      INTEGER NOT NULL,
  iteration   INTEGER NOT NULL,
  pass_kind   TEXT NOT NULL,
  target      TEXT NOT NULL,
  source_hash TEXT NOT NULL,
  created_at  INTEGER NOT NULL
);
CREATE INDEX candidates_by_run ON candidates (run_id);
CREATE INDEX candidates_by_task ON candidates (task_id);
CREATE INDEX candidates_by_parent ON candidates (parent_id);

CREATE TABLE evaluations (
  id           TEXT PRIMARY KEY,
  run_id       TEXT NOT NULL REFERENCES runs(id),
  candidate_id TEXT NOT NULL REFERENCES candidates(id),
  target       TEXT NOT NULL,
  device       TEXT NOT NULL,
  status       TEXT NOT NULL,
  verdict_json TEXT NOT NULL CHECK (json_valid(verdict_json)),
  wall_s       REAL NOT NULL,
  created_at   INTEGER NOT NULL
);
CREATE INDEX evaluations_by_run ON evaluations (run_id);
CREATE INDEX evaluations_by_candidate ON evaluations (candidate_id);

CREATE TABLE profiles (
  id            TEXT PRIMARY KEY,
  evaluation_id TEXT NOT NULL REFERENCES evaluations(id),
  tool          TEXT NOT NULL,
  raw_hash      TEXT NOT NULL,
  summary_hash  TEXT NOT NULL,
  created_at    INTEGER NOT NULL
);
CREATE INDEX profiles_by_evaluation ON profiles (evaluation_id);

CREATE TABLE recommendations (
  id                  TEXT PRIMARY KEY,
  run_id              TEXT NOT NULL REFERENCES runs(id),
  candidate_id        TEXT NOT NULL REFERENCES candidates(id),
  llm_call_id         TEXT REFERENCES llm_calls(id),
  recommendation_json TEXT NOT NULL CHECK (json_valid(recommendation_json)),
  created_at          INTEGER NOT NULL
);
CREATE INDEX recommendations_by_run ON recommendations (run_id);
CREATE INDEX recommendations_by_candidate ON recommendations (candidate_id);
)sql";

constexpr std::array<std::string_view, kSchemaVersion> kMigrations = {kVersion1};

// Version recorded in schema_version; 0 for a fresh database.
Result<int> CurrentVersion(sqlite3* db) {
  auto stmt = Statement::Prepare(db, "SELECT COALESCE(MAX(version), 0) FROM schema_version");
  if (!stmt) return std::unexpected(std::move(stmt).error());
  auto row = stmt->Step();
  if (!row) return std::unexpected(std::move(row).error());
  return static_cast<int>(stmt->Int(0));
}

Status MigrateLocked(sqlite3* db, const std::filesystem::path& db_path) {
  KFORGE_RETURN_IF_ERROR(Exec(db,
                              "CREATE TABLE IF NOT EXISTS schema_version ("
                              "  version    INTEGER PRIMARY KEY,"
                              "  applied_at INTEGER NOT NULL)"));
  auto current = CurrentVersion(db);
  if (!current) return std::unexpected(std::move(current).error());
  if (*current > kSchemaVersion) {
    return InvalidArgument(fmt::format(
        "run store {} has schema version {}, newer than the newest this kforge can read ({}); "
        "open it with the kforge that wrote it, or upgrade kforge",
        db_path.string(), *current, kSchemaVersion));
  }
  for (int version = *current + 1; version <= kSchemaVersion; ++version) {
    if (auto status = Exec(db, kMigrations[static_cast<std::size_t>(version - 1)]); !status) {
      return MakeError(status.error().code,
                       fmt::format("migrating run store {} to schema version {} failed: {}",
                                   db_path.string(), version, status.error().message));
    }
    auto insert =
        Statement::Prepare(db, "INSERT INTO schema_version (version, applied_at) VALUES (?, ?)");
    if (!insert) return std::unexpected(std::move(insert).error());
    KFORGE_RETURN_IF_ERROR(
        insert->BindAll(static_cast<std::int64_t>(version), Now().time_since_epoch().count())
            .Run());
  }
  return Ok();
}

}  // namespace

Status Migrate(sqlite3* db, const std::filesystem::path& db_path) {
  KFORGE_RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE"));
  Status status = MigrateLocked(db, db_path);
  if (!status) {
    (void)Exec(db, "ROLLBACK");
    return status;
  }
  return Exec(db, "COMMIT");
}

}  // namespace kforge::store::internal
