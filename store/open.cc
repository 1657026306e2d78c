#include "store/open.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "store/schema.h"

namespace colltest::store {
namespace {

constexpr char kMemory[] = ":memory:";
// How long a writer waits for another connection's lock (the sqlite3 shell holding a read, a
// checkpoint) before SQLITE_BUSY.
constexpr int kBusyTimeoutMs = 5000;

absl::Status Unwritable(const std::string& path, absl::string_view why) {
  return absl::PermissionDeniedError(absl::StrCat("cannot write history database ", path, " (", why,
                                                  "): check its owner and mode"));
}

absl::Status Unusable(const std::string& path, absl::string_view why) {
  return absl::FailedPreconditionError(
      absl::StrCat("history database ", path, " is not a usable SQLite database (", why,
                   "): move it away to start with an empty history, or restore a backup"));
}

// True when the connection's last failure says the file's bytes are damaged or not SQLite's.
bool LastErrorIsDamage(const Database& db) {
  const int rc = sqlite3_errcode(db.handle()) & 0xff;
  return rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT;
}

bool LastErrorIsUnwritable(const Database& db) {
  const int rc = sqlite3_errcode(db.handle()) & 0xff;
  return rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN || rc == SQLITE_PERM;
}

// Checked before SQLite touches the file, for messages that say what to fix. The directory must be
// writable even when the database exists: WAL keeps its -wal and -shm files beside it.
absl::Status CheckPlace(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  struct stat st {};
  const bool exists = stat(dir.c_str(), &st) == 0;
  if (!exists || !S_ISDIR(st.st_mode)) {
    const std::string why = exists ? "not a directory" : strerror(errno);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create history database ", path, ": its directory ", dir,
                     " cannot be used (", why, "): create it, or give another --state-dir"));
  }
  if (faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
    return Unwritable(path, absl::StrCat("directory ", dir, ": ", strerror(errno)));
  }
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();  // created by the open
    return Unwritable(path, strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return Unusable(path, "not a regular file");
  if (faccessat(AT_FDCWD, path.c_str(), R_OK | W_OK, AT_EACCESS) != 0) {
    return Unwritable(path, strerror(errno));
  }
  return absl::OkStatus();
}

// Reads, never writes: the schema version (the first read of the file, where SQLite finds out
// whether it is a database at all) and the structural check of every page.
absl::Status CheckContents(Database& db) {
  const absl::StatusOr<int> version = SchemaVersion(db);
  if (!version.ok()) {
    if (LastErrorIsDamage(db)) return Unusable(db.path(), sqlite3_errmsg(db.handle()));
    return version.status();
  }
  if (*version > kSchemaVersion) return NewerSchemaError(db, *version);
  const absl::StatusOr<std::string> check =
      db.QueryText("PRAGMA quick_check(1)", "check the database's integrity");
  if (!check.ok()) {
    if (LastErrorIsDamage(db)) return Unusable(db.path(), sqlite3_errmsg(db.handle()));
    return check.status();
  }
  if (*check != "ok") return Unusable(db.path(), *check);
  return absl::OkStatus();
}

// WAL: a commit appends to the -wal file, readers (the sqlite3 shell) do not block the writer,
// and with synchronous=NORMAL a commit is in the kernel's hands when it returns, so it survives
// a kill of the process (a power loss may lose the last commits, never corrupt the file).
absl::Status UseWal(Database& db, bool memory) {
  const absl::StatusOr<std::string> mode =
      db.QueryText("PRAGMA journal_mode = WAL", "switch to write-ahead logging");
  if (!mode.ok()) {
    if (LastErrorIsUnwritable(db)) return Unwritable(db.path(), sqlite3_errmsg(db.handle()));
    return mode.status();
  }
  const char* want = memory ? "memory" : "wal";
  if (*mode != want) {
    return absl::FailedPreconditionError(absl::StrCat(
        "history database ", db.path(), " cannot use write-ahead logging (journal mode stays ",
        *mode, "): keep the state directory on a local file system"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Database>> OpenHistoryDatabase(const std::string& path) {
  const bool memory = path == kMemory;
  if (!memory) COLLTEST_RETURN_IF_ERROR(CheckPlace(path));
  COLLTEST_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path));
  // SQLite opens a write-protected file read-only instead of failing.
  if (sqlite3_db_readonly(db->handle(), "main") == 1) return Unwritable(path, strerror(EACCES));
  sqlite3_busy_timeout(db->handle(), kBusyTimeoutMs);
  COLLTEST_RETURN_IF_ERROR(CheckContents(*db));
  // Per connection; they read the file, so they come after the check that it is a database.
  // foreign_keys: the cascades from runs to cases and run_variants, and the guard on a baseline's
  // run.
  COLLTEST_RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL",
                                    "configure the connection"));
  COLLTEST_ASSIGN_OR_RETURN(const int64_t foreign_keys,
                            db->QueryInt("PRAGMA foreign_keys", "check foreign_keys"));
  if (foreign_keys != 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "history database ", path, ": this SQLite library does not enforce foreign keys"));
  }
  COLLTEST_RETURN_IF_ERROR(UseWal(*db, memory));
  return db;
}

}  // namespace colltest::store
