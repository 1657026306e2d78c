#include "store/database.h"

#include <sqlite3.h>

#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace colltest::store {
namespace {

// The status code callers act on: a busy database may be retried, a duplicate key is the caller's
// mistake, a damaged file or a read-only one needs a person.
absl::StatusCode CodeOf(int rc) {
  switch (rc) {
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_UNIQUE:
      return absl::StatusCode::kAlreadyExists;
    default:
      break;
  }
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::StatusCode::kUnavailable;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::StatusCode::kPermissionDenied;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_CONSTRAINT:
    case SQLITE_CANTOPEN:
      return absl::StatusCode::kFailedPrecondition;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return absl::StatusCode::kResourceExhausted;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

// --- Statement ---

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      purpose_(std::move(other.purpose_)),
      bind_status_(std::move(other.bind_status_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    purpose_ = std::move(other.purpose_);
    bind_status_ = std::move(other.bind_status_);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::NoteBind(int rc) {
  if (rc != SQLITE_OK && bind_status_.ok()) bind_status_ = db_->Error(rc, purpose_);
}

Statement& Statement::BindInt(int index, int64_t value) {
  NoteBind(sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Statement& Statement::BindDouble(int index, double value) {
  NoteBind(sqlite3_bind_double(stmt_, index, value));
  return *this;
}

// SQLITE_TRANSIENT: SQLite copies the bytes, so a temporary string may be bound.
Statement& Statement::BindText(int index, absl::string_view text) {
  NoteBind(
      sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}

Statement& Statement::BindBlob(int index, absl::string_view bytes) {
  // A zero-length blob with a null pointer would be stored as NULL; "" keeps it a blob.
  const char* data = bytes.empty() ? "" : bytes.data();
  NoteBind(sqlite3_bind_blob64(stmt_, index, data, bytes.size(), SQLITE_TRANSIENT));
  return *this;
}

absl::StatusOr<bool> Statement::Step() {
  COLLTEST_RETURN_IF_ERROR(bind_status_);
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->Error(rc, purpose_);
}

absl::Status Statement::Run() {
  while (true) {
    COLLTEST_ASSIGN_OR_RETURN(const bool row, Step());
    if (!row) return absl::OkStatus();
  }
}

void Statement::Reset() {
  sqlite3_clear_bindings(stmt_);
  bind_status_ = absl::OkStatus();
  // Its result repeats the error of the last step, which Step() has reported already.
  sqlite3_reset(stmt_);
}

int64_t Statement::ColumnInt(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::ColumnDouble(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt_, column));
}

std::string Statement::ColumnBlob(int column) const {
  const void* blob = sqlite3_column_blob(stmt_, column);
  if (blob == nullptr) return "";
  return std::string(static_cast<const char*>(blob), sqlite3_column_bytes(stmt_, column));
}

bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

// --- Database ---

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path) {
  sqlite3* db = nullptr;
  // NOMUTEX: the RunStore's own mutex serializes every call, including the read of the error
  // message that follows a failed call (SQLite's mutex would not keep those two together).
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  // Wrapped at once, so that the handle is closed on every path, the failed open's included.
  std::unique_ptr<Database> database(new Database(path, db));
  if (db == nullptr) return absl::ResourceExhaustedError("sqlite3_open_v2: out of memory");
  if (rc != SQLITE_OK) return database->Error(rc, "open");
  sqlite3_extended_result_codes(db, 1);
  return database;
}

Database::~Database() {
  // close_v2 finalizes nothing itself; every Statement is gone by now (they live in functions).
  sqlite3_close_v2(db_);
}

absl::StatusOr<Statement> Database::Prepare(absl::string_view sql, absl::string_view purpose) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return Error(rc, purpose);
  return Statement(this, stmt, std::string(purpose));
}

absl::Status Database::Exec(absl::string_view sql, absl::string_view purpose) {
  const std::string text(sql);  // sqlite3_exec wants a NUL-terminated string
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Error(rc, purpose);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Database::QueryInt(absl::string_view sql, absl::string_view purpose) {
  COLLTEST_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql, purpose));
  COLLTEST_ASSIGN_OR_RETURN(const bool row, stmt.Step());
  if (!row)
    return absl::InternalError(
        absl::StrCat("history database ", path_, ": ", purpose, ": the query returned no row"));
  return stmt.ColumnInt(0);
}

absl::StatusOr<std::string> Database::QueryText(absl::string_view sql, absl::string_view purpose) {
  COLLTEST_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql, purpose));
  COLLTEST_ASSIGN_OR_RETURN(const bool row, stmt.Step());
  if (!row)
    return absl::InternalError(
        absl::StrCat("history database ", path_, ": ", purpose, ": the query returned no row"));
  return stmt.ColumnText(0);
}

int64_t Database::changes() const { return sqlite3_changes64(db_); }

absl::Status Database::Error(int rc, absl::string_view purpose) const {
  const char* message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  absl::Status status(CodeOf(rc),
                      absl::StrCat("history database ", path_, ": ", purpose, ": ", message));
  status.SetPayload(kSqliteMessagePayload, absl::Cord(message));
  return status;
}

std::string SqliteMessageOf(const absl::Status& status) {
  const auto message = status.GetPayload(kSqliteMessagePayload);  // absl::optional<absl::Cord>
  return message.has_value() ? std::string(*message) : std::string(status.message());
}

// --- Transaction ---

absl::StatusOr<Transaction> Transaction::Begin(Database* db, absl::string_view purpose) {
  COLLTEST_RETURN_IF_ERROR(db->Exec("BEGIN IMMEDIATE", absl::StrCat(purpose, " (begin)")));
  return Transaction(db, std::string(purpose));
}

Transaction::~Transaction() {
  // Nothing to report to: the error that made the caller return early is what it reports.
  if (db_ != nullptr) db_->Exec("ROLLBACK", purpose_).IgnoreError();
}

absl::Status Transaction::Commit() {
  Database* db = std::exchange(db_, nullptr);
  const absl::Status status = db->Exec("COMMIT", absl::StrCat(purpose_, " (commit)"));
  // A failed COMMIT may leave the transaction open (SQLITE_BUSY); roll it back so that the
  // connection is usable for the next caller.
  if (!status.ok() && !sqlite3_get_autocommit(db->handle())) {
    db->Exec("ROLLBACK", purpose_).IgnoreError();
  }
  return status;
}

}  // namespace colltest::store
