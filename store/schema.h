// The history database's schema: an ordered list of migrations, each bringing the database from
// version N-1 to N (PRAGMA user_version) in one transaction. A fresh database runs them all, so an
// old database migrated and a new one end with the same tables. A migration, once released, is
// never edited: a change is a new migration (tests/unit/store/schema_v1.sql freezes version 1).
// Tables and columns: docs/history.md.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/database.h"

namespace colltest::store {

// The version this colltest writes. A database of a higher version is refused, never downgraded.
inline constexpr int kSchemaVersion = 5;

// PRAGMA user_version: 0 for a fresh (empty) database.
absl::StatusOr<int> SchemaVersion(Database& db);

// The refusal of a database written by a newer colltest (FAILED_PRECONDITION).
absl::Status NewerSchemaError(const Database& db, int version);

// Runs the migrations from the database's version up to kSchemaVersion, each in its own
// transaction with its user_version update, so that a kill between two leaves a database at a
// version it names. FAILED_PRECONDITION for a newer database (left untouched).
absl::Status Migrate(Database& db);

}  // namespace colltest::store
