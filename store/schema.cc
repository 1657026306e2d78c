#include "store/schema.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "colltest/v1/colltest.pb.h"
#include "common/status_macros.h"

namespace colltest::store {
namespace {

// Version 1: runs, their cases and the machines they ran on. Frozen: a copy of it is
// tests/unit/store/schema_v1.sql, from which the migration test builds a version-1 database.
// Each proto is stored whole as a blob (the record of truth, read back by GetRun); the columns
// beside it repeat what SQL filters, counts and sorts on, and request_json is the request as JSON,
// for reading with the sqlite3 shell.
constexpr char kSchemaV1[] = R"sql(
CREATE TABLE machines (
  key TEXT PRIMARY KEY,
  hostname TEXT NOT NULL,
  identity BLOB NOT NULL
);
CREATE TABLE runs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT UNIQUE NOT NULL,
  state INTEGER NOT NULL,
  label TEXT NOT NULL,
  owner TEXT NOT NULL,
  backend TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  message TEXT NOT NULL,
  request_json TEXT NOT NULL,
  spec BLOB NOT NULL,
  machine_key TEXT NOT NULL,
  cases INTEGER NOT NULL DEFAULT 0,
  ok INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE cases (
  run_seq INTEGER NOT NULL REFERENCES runs(seq) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  variant INTEGER NOT NULL,
  mode INTEGER NOT NULL,
  world INTEGER NOT NULL,
  m INTEGER NOT NULL,
  n INTEGER NOT NULL,
  dtype INTEGER NOT NULL,
  status INTEGER NOT NULL,
  median_us REAL NOT NULL,
  result BLOB NOT NULL,
  PRIMARY KEY (run_seq, idx)
);
)sql";

// Version 2: baselines, the variants each run asked for (the ListRuns variant filter), the
// indexes of the ListRuns filters, and runs.machine_ref: the machines row of the identity a run
// ran with (the key plus a hash of the whole identity), so that a driver or colltest upgrade
// shows in the runs after it while the key, which baselines use, stays the same (version-1 runs
// refer to the row of their key, which is how version 1 recorded machines); and runs.case_bytes,
// the serialized size of a run's cases, which --history-max-bytes bounds. A baseline's run cannot
// be deleted (the foreign key), so that a baseline never names a run that is gone.
constexpr char kSchemaV2[] = R"sql(
CREATE TABLE baselines (
  machine_key TEXT NOT NULL,
  name TEXT NOT NULL,
  run_id TEXT NOT NULL REFERENCES runs(run_id),
  set_ms INTEGER NOT NULL,
  set_by TEXT NOT NULL,
  hostname TEXT NOT NULL,
  PRIMARY KEY (machine_key, name)
);
CREATE INDEX baselines_by_run ON baselines(run_id);
CREATE TABLE run_variants (
  run_seq INTEGER NOT NULL REFERENCES runs(seq) ON DELETE CASCADE,
  variant INTEGER NOT NULL,
  PRIMARY KEY (run_seq, variant)
);
CREATE INDEX run_variants_by_variant ON run_variants(variant, run_seq);
CREATE INDEX runs_by_label ON runs(label);
CREATE INDEX runs_by_state ON runs(state);
CREATE INDEX runs_by_created ON runs(created_ms);
ALTER TABLE runs ADD COLUMN machine_ref TEXT;
UPDATE runs SET machine_ref = machine_key WHERE machine_key != '';
ALTER TABLE runs ADD COLUMN case_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET case_bytes =
  (SELECT COALESCE(SUM(length(result)), 0) FROM cases WHERE cases.run_seq = runs.seq);
)sql";

// Version 3: where a run's ranks were placed (RunResult.ranks_per_gpu and time_sliced), which
// GetRun returns and compare and baselines match on: ranks that shared a GPU time kernel overhead,
// not a link. Runs recorded before read 0 (one rank per GPU) and not time-sliced.
constexpr char kSchemaV3[] = R"sql(
ALTER TABLE runs ADD COLUMN ranks_per_gpu INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN time_sliced INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 4: baselines.owner, the caller that created a baseline (the token's name, or the peer
// with authentication off). A runner may replace only the baselines it owns and an owner holds at
// most --max-baselines-per-owner of them (store/baselines.cc). Baselines set before have no owner
// ('') and count against nobody: only an admin may replace them.
constexpr char kSchemaV4[] = R"sql(
ALTER TABLE baselines ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX baselines_by_owner ON baselines(owner);
)sql";

// Version 5: the index of the ListRuns machine_key filter (a machine's runs, newest first: the
// dashboard's trend of one case across the runs of one machine).
constexpr char kSchemaV5[] = R"sql(
CREATE INDEX IF NOT EXISTS runs_by_machine ON runs(machine_key, seq);
)sql";

absl::Status CreateV1(Database& db) { return db.Exec(kSchemaV1, "create schema version 1"); }

// SQL cannot read the variants out of a serialized SweepSpec, so this step is C++, inside the
// migration's transaction: either every run gets its variants and the version becomes 2, or
// nothing changes.
absl::Status FillRunVariants(Database& db) {
  COLLTEST_ASSIGN_OR_RETURN(Statement runs,
                            db.Prepare("SELECT seq, run_id, spec FROM runs ORDER BY seq",
                                       "migrate to version 2: read the runs' requests"));
  COLLTEST_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT OR IGNORE INTO run_variants (run_seq, variant) VALUES (?, ?)",
                 "migrate to version 2: record a run's variants"));
  while (true) {
    COLLTEST_ASSIGN_OR_RETURN(const bool row, runs.Step());
    if (!row) return absl::OkStatus();
    colltest::v1::SweepSpec spec;
    if (!spec.ParseFromString(runs.ColumnBlob(2))) {
      return absl::FailedPreconditionError(absl::StrCat(
          "history database ", db.path(), ": migrate to version 2: the request of run ",
          runs.ColumnText(1), " cannot be read: restore a backup"));
    }
    for (const int variant : spec.variants()) {
      COLLTEST_RETURN_IF_ERROR(insert.BindInt(1, runs.ColumnInt(0)).BindInt(2, variant).Run());
      insert.Reset();
    }
  }
}

absl::Status MigrateToV2(Database& db) {
  COLLTEST_RETURN_IF_ERROR(db.Exec(kSchemaV2, "create schema version 2"));
  return FillRunVariants(db);
}

absl::Status MigrateToV3(Database& db) { return db.Exec(kSchemaV3, "create schema version 3"); }

absl::Status MigrateToV4(Database& db) { return db.Exec(kSchemaV4, "create schema version 4"); }

absl::Status MigrateToV5(Database& db) { return db.Exec(kSchemaV5, "create schema version 5"); }

struct Migration {
  int version;  // the version the database has after it
  absl::Status (*apply)(Database& db);
};

constexpr Migration kMigrations[] = {
    {1, CreateV1}, {2, MigrateToV2}, {3, MigrateToV3}, {4, MigrateToV4}, {5, MigrateToV5},
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

}  // namespace

absl::StatusOr<int> SchemaVersion(Database& db) {
  COLLTEST_ASSIGN_OR_RETURN(const int64_t version,
                            db.QueryInt("PRAGMA user_version", "read the schema version"));
  return static_cast<int>(version);
}

absl::Status NewerSchemaError(const Database& db, int version) {
  return absl::FailedPreconditionError(
      absl::StrCat("history database ", db.path(), " has schema version ", version,
                   ", written by a newer colltest (this one knows versions up to ", kSchemaVersion,
                   "): upgrade colltest, or give this colltestd another --state-dir"));
}

absl::Status Migrate(Database& db) {
  for (const Migration& migration : kMigrations) {
    const std::string purpose = absl::StrCat("migrate to schema version ", migration.version);
    COLLTEST_ASSIGN_OR_RETURN(Transaction transaction, Transaction::Begin(&db, purpose));
    // Read under the write lock: another process may have migrated since we last looked.
    COLLTEST_ASSIGN_OR_RETURN(const int version, SchemaVersion(db));
    if (version > kSchemaVersion) return NewerSchemaError(db, version);
    if (version >= migration.version) continue;  // the destructor ends the empty transaction
    COLLTEST_RETURN_IF_ERROR(migration.apply(db));
    COLLTEST_RETURN_IF_ERROR(
        db.Exec(absl::StrCat("PRAGMA user_version = ", migration.version), purpose));
    COLLTEST_RETURN_IF_ERROR(transaction.Commit());
  }
  return absl::OkStatus();
}

}  // namespace colltest::store
