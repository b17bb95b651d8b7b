// Internal to the store: the versioned SQLite schema and its forward-only migrations.
//
// docs/store.md documents every version. A migration is never edited once released; a change to
// the schema (a table, a column, an index, or a new stored enum value) is a new migration.
#ifndef KFORGE_SRC_STORE_SCHEMA_H_
#define KFORGE_SRC_STORE_SCHEMA_H_

#include <sqlite3.h>

#include <filesystem>

#include "kforge/core/error.h"

namespace kforge::store::internal {

// The schema version this build writes and the newest it can open.
inline constexpr int kSchemaVersion = 1;

// Brings the database at `db_path` (open as `db`) up to kSchemaVersion in one IMMEDIATE
// transaction, so that two processes opening a fresh store at once migrate it once. Refuses a
// database whose version is newer than kSchemaVersion, naming the file.
Status Migrate(sqlite3* db, const std::filesystem::path& db_path);

}  // namespace kforge::store::internal

#endif  // KFORGE_SRC_STORE_SCHEMA_H_
