// Internal to the store: a thin RAII layer over the sqlite3 C API.
//
// Not thread-safe; RunStore calls it with its connection mutex held.
#ifndef KFORGE_SRC_STORE_SQLITE_STATEMENT_H_
#define KFORGE_SRC_STORE_SQLITE_STATEMENT_H_

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kforge/core/error.h"

namespace kforge::store::internal {

// An Error for result code `rc` of `db`, prefixed with `what`. Constraint violations (a foreign
// key to a missing row, a duplicate id, malformed JSON) are kInvalidArgument, a lock held past the
// busy timeout is kUnavailable, anything else kIo.
Error SqliteError(sqlite3* db, int rc, std::string_view what);

// Runs one or more statements that return no rows.
Status Exec(sqlite3* db, std::string_view sql);

class Statement {
 public:
  static Result<Statement> Prepare(sqlite3* db, std::string_view sql);

  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Bind parameters 1, 2, ... in order. An empty optional binds NULL. A failed bind is reported by
  // the next Step().
  template <typename... Args>
  Statement& BindAll(const Args&... args) {
    int index = 1;
    (Bind(index++, args), ...);
    return *this;
  }

  // True when a row is ready, false when the statement is done.
  Result<bool> Step();
  // Steps a statement that returns no rows to completion.
  Status Run();

  bool IsNull(int column) const;
  std::string Text(int column) const;
  std::optional<std::string> OptionalText(int column) const;
  std::int64_t Int(int column) const;
  double Double(int column) const;

 private:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}

  void Bind(int index, std::string_view value);
  void Bind(int index, const std::string& value) { Bind(index, std::string_view(value)); }
  void Bind(int index, const char* value) { Bind(index, std::string_view(value)); }
  void Bind(int index, std::int64_t value);
  void Bind(int index, int value) { Bind(index, static_cast<std::int64_t>(value)); }
  void Bind(int index, double value);
  template <typename T>
  void Bind(int index, const std::optional<T>& value) {
    if (value) {
      Bind(index, *value);
    } else {
      BindNull(index);
    }
  }
  void BindNull(int index);
  void Check(int rc);

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  int bind_rc_ = SQLITE_OK;
};

}  // namespace kforge::store::internal

#endif  // KFORGE_SRC_STORE_SQLITE_STATEMENT_H_
