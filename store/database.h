// A thin RAII layer over one SQLite connection: the connection, its prepared statements and its
// transactions each close, finalize or roll back when they go away, and every SQLite error comes
// back as an absl::Status naming the database file and what the statement was for. Not
// thread-safe: RunStore serializes every use of a Database behind its mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

struct sqlite3;
struct sqlite3_stmt;

namespace colltest::store {

class Database;

// Every error of a Database carries SQLite's own words ("database or disk is full") as this
// payload, so that a caller can name the cause without the file and statement around it.
inline constexpr char kSqliteMessagePayload[] = "type.colltest.dev/store.SqliteMessage";

// SQLite's words of an error from this layer (kSqliteMessagePayload); the whole message for any
// other status.
std::string SqliteMessageOf(const absl::Status& status);

// One prepared statement. Bind* take 1-based parameter indices and copy what they are given;
// the first failed bind is reported by the next Step() or Run(). Column accessors take 0-based
// column indices and are valid after Step() returned true.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& BindInt(int index, int64_t value);
  Statement& BindDouble(int index, double value);
  Statement& BindText(int index, absl::string_view text);
  Statement& BindBlob(int index, absl::string_view bytes);

  // True when a row is ready, false when the statement is done.
  absl::StatusOr<bool> Step();
  // Steps to the end, ignoring any row (INSERT, UPDATE, DELETE, DDL).
  absl::Status Run();
  // Clears the bindings and rewinds, so that the statement can run again with new values.
  void Reset();

  int64_t ColumnInt(int column) const;
  double ColumnDouble(int column) const;
  std::string ColumnText(int column) const;  // "" for NULL
  std::string ColumnBlob(int column) const;  // "" for NULL
  bool ColumnIsNull(int column) const;

 private:
  friend class Database;
  Statement(Database* db, sqlite3_stmt* stmt, std::string purpose)
      : db_(db), stmt_(stmt), purpose_(std::move(purpose)) {}
  void NoteBind(int rc);

  Database* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::string purpose_;
  absl::Status bind_status_;
};

class Database {
 public:
  // Opens (creating when missing) `path` for reading and writing; ":memory:" is a private
  // in-memory database. Runs no statement, so that a refused file is never written. Extended
  // result codes are on, so that a failed constraint can be told apart from other failures.
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

  // `purpose` says what the statement is for ("insert case 3 of run r-1"); errors carry it.
  absl::StatusOr<Statement> Prepare(absl::string_view sql, absl::string_view purpose);
  // Runs one or more statements that bind nothing (DDL, PRAGMA, BEGIN/COMMIT).
  absl::Status Exec(absl::string_view sql, absl::string_view purpose);
  // The first column of the first row of `sql` (a count, a PRAGMA's answer).
  absl::StatusOr<int64_t> QueryInt(absl::string_view sql, absl::string_view purpose);
  absl::StatusOr<std::string> QueryText(absl::string_view sql, absl::string_view purpose);
  // Rows changed by the last INSERT, UPDATE or DELETE.
  int64_t changes() const;

  // The status of the SQLite result code `rc`, with the connection's last error message:
  // "history database PATH: PURPOSE: MESSAGE".
  absl::Status Error(int rc, absl::string_view purpose) const;

 private:
  Database(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}

  const std::string path_;
  sqlite3* db_;
};

// BEGIN IMMEDIATE ... COMMIT; rolled back when it goes away uncommitted (an early return on an
// error). IMMEDIATE takes the write lock at the start, so that a writer waits (busy_timeout) at
// BEGIN instead of failing half-way when it upgrades a read lock.
class Transaction {
 public:
  static absl::StatusOr<Transaction> Begin(Database* db, absl::string_view purpose);
  Transaction(Transaction&& other) noexcept : db_(other.db_), purpose_(std::move(other.purpose_)) {
    other.db_ = nullptr;
  }
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  absl::Status Commit();

 private:
  Transaction(Database* db, std::string purpose) : db_(db), purpose_(std::move(purpose)) {}

  Database* db_;  // null once committed or rolled back
  std::string purpose_;
};

}  // namespace colltest::store
