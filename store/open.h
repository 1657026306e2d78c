// Opening the history database: the checks that refuse a file colltestd must not use, and the
// connection's settings. Kept apart from RunStore so that the rules for a file on disk read in one
// place.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "store/database.h"

namespace colltest::store {

// Opens `path` (":memory:" for a private in-memory database), creating it when missing, with
// busy_timeout 5000 ms, foreign_keys=ON, synchronous=NORMAL and journal_mode=WAL, after checking,
// in this order and before anything is written:
//   - that the file and its directory can be written (PERMISSION_DENIED, "check its owner and
//     mode"), and that the directory exists (FAILED_PRECONDITION);
//   - that it is an SQLite database that passes PRAGMA quick_check (FAILED_PRECONDITION, "move it
//     away ... or restore a backup");
//   - that its schema is not newer than kSchemaVersion (FAILED_PRECONDITION, "upgrade colltest").
// The schema is not migrated here (store/schema.h).
absl::StatusOr<std::unique_ptr<Database>> OpenHistoryDatabase(const std::string& path);

}  // namespace colltest::store
