#include "sqlite_statement.h"

#include <fmt/format.h>

#include <algorithm>

namespace kforge::store::internal {

Error SqliteError(sqlite3* db, int rc, std::string_view what) {
  ErrorCode code = ErrorCode::kIo;
  switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
      code = ErrorCode::kInvalidArgument;
      break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      code = ErrorCode::kUnavailable;
      break;
    default:
      break;
  }
  const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return Error{code, fmt::format("{}: {} ({})", what, detail, sqlite3_errstr(rc))};
}

Status Exec(sqlite3* db, std::string_view sql) {
  std::string text(sql);
  int rc = sqlite3_exec(db, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return std::unexpected(SqliteError(db, rc, "sqlite"));
  return Ok();
}

Result<Statement> Statement::Prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return std::unexpected(SqliteError(db, rc, "preparing a statement"));
  }
  return Statement(db, stmt);
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(other.stmt_), bind_rc_(other.bind_rc_) {
  other.stmt_ = nullptr;
}

Statement::~Statement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

void Statement::Check(int rc) {
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void Statement::Bind(int index, std::string_view value) {
  Check(sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT,
                            SQLITE_UTF8));
}

void Statement::Bind(int index, std::int64_t value) {
  Check(sqlite3_bind_int64(stmt_, index, value));
}

void Statement::Bind(int index, double value) { Check(sqlite3_bind_double(stmt_, index, value)); }

void Statement::BindNull(int index) { Check(sqlite3_bind_null(stmt_, index)); }

Result<bool> Statement::Step() {
  if (bind_rc_ != SQLITE_OK) {
    return std::unexpected(SqliteError(db_, bind_rc_, "binding a parameter"));
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // Name the statement by its head, e.g. "INSERT INTO candidates".
  const char* sql = sqlite3_sql(stmt_);
  std::string_view head = sql != nullptr ? std::string_view(sql) : std::string_view();
  head = head.substr(0, std::min<std::size_t>(head.find_first_of("(\n"), 60));
  while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
  return std::unexpected(SqliteError(db_, rc, fmt::format("running '{}'", head)));
}

Status Statement::Run() {
  for (;;) {
    auto row = Step();
    if (!row) return std::unexpected(std::move(row).error());
    if (!*row) return Ok();
  }
}

bool Statement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

std::string Statement::Text(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  if (text == nullptr) return {};
  return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::optional<std::string> Statement::OptionalText(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Text(column);
}

std::int64_t Statement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::Double(int column) const { return sqlite3_column_double(stmt_, column); }

}  // namespace kforge::store::internal
