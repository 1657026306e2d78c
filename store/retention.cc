// RunStore's housekeeping: the runs a killed colltestd left active, found at start, and
// retention (Prune). Both keep every case a deleted run does not own.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "store/database.h"
#include "store/run_store.h"

namespace colltest::store {
namespace {

// What Prune never deletes, as SQL over `runs`: an active run (its cases are still landing) and a
// run some baseline names (a comparison needs it). The foreign key of baselines.run_id refuses
// the second as well, so a mistake here fails the Prune instead of losing a baseline's run.
constexpr char kDeletable[] =
    "state NOT IN (1, 2) AND run_id NOT IN (SELECT run_id FROM baselines)";
static_assert(colltest::v1::RUN_STATE_QUEUED == 1 && colltest::v1::RUN_STATE_RUNNING == 2);

absl::StatusOr<uint64_t> DeleteBeyondCount(Database& db, uint64_t max_runs) {
  if (max_runs == 0) return 0;
  // The newest max_runs runs are kept whatever their state; the older ones go unless protected.
  COLLTEST_ASSIGN_OR_RETURN(
      Statement erase,
      db.Prepare(absl::StrCat("DELETE FROM runs WHERE seq < (SELECT seq FROM runs ORDER BY seq "
                              "DESC LIMIT 1 OFFSET ?) AND ",
                              kDeletable),
                 absl::StrCat("prune runs beyond the newest ", max_runs)));
  COLLTEST_RETURN_IF_ERROR(erase.BindInt(1, static_cast<int64_t>(max_runs - 1)).Run());
  return static_cast<uint64_t>(db.changes());
}

absl::StatusOr<uint64_t> DeleteOlderThan(Database& db, int64_t cutoff_ms) {
  COLLTEST_ASSIGN_OR_RETURN(
      Statement erase,
      db.Prepare(absl::StrCat("DELETE FROM runs WHERE created_ms < ? AND ", kDeletable),
                 absl::StrCat("prune runs created before ", cutoff_ms, " ms")));
  COLLTEST_RETURN_IF_ERROR(erase.BindInt(1, cutoff_ms).Run());
  return static_cast<uint64_t>(db.changes());
}

// Keeps the newest runs whose cases add up to at most max_bytes (a run that would pass the bound
// and every older one go, unless protected; protected runs still count).
absl::StatusOr<uint64_t> DeleteBeyondBytes(Database& db, uint64_t max_bytes) {
  if (max_bytes == 0) return 0;
  COLLTEST_ASSIGN_OR_RETURN(
      Statement erase,
      db.Prepare(absl::StrCat("DELETE FROM runs WHERE seq IN (SELECT seq FROM (SELECT seq, "
                              "SUM(case_bytes) OVER (ORDER BY seq DESC ROWS UNBOUNDED PRECEDING) "
                              "AS newer FROM runs) WHERE newer > ?) AND ",
                              kDeletable),
                 absl::StrCat("prune runs beyond ", max_bytes, " bytes of cases")));
  COLLTEST_RETURN_IF_ERROR(erase.BindInt(1, static_cast<int64_t>(max_bytes)).Run());
  return static_cast<uint64_t>(db.changes());
}

}  // namespace

absl::StatusOr<std::vector<std::string>> RunStore::MarkInterrupted(const std::string& message,
                                                                   int64_t now_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string purpose = "mark the runs left active as interrupted";
  COLLTEST_ASSIGN_OR_RETURN(Transaction transaction, Transaction::Begin(db_.get(), purpose));
  COLLTEST_ASSIGN_OR_RETURN(Statement update,
                            db_->Prepare("UPDATE runs SET state = ?, message = ?, finished_ms = ? "
                                         "WHERE state IN (1, 2) RETURNING run_id",
                                         purpose));
  update.BindInt(1, colltest::v1::RUN_STATE_INTERRUPTED)
      .BindText(2, message)
      .BindInt(3, now_unix_ms);
  std::vector<std::string> ids;
  while (true) {
    COLLTEST_ASSIGN_OR_RETURN(const bool row, update.Step());
    if (!row) break;
    ids.push_back(update.ColumnText(0));
  }
  COLLTEST_RETURN_IF_ERROR(transaction.Commit());
  return ids;
}

absl::StatusOr<uint64_t> RunStore::Prune(uint64_t max_runs, absl::Duration max_age,
                                         uint64_t max_bytes, int64_t now_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  COLLTEST_ASSIGN_OR_RETURN(Transaction transaction, Transaction::Begin(db_.get(), "prune runs"));
  // Cases and run_variants go with their run (ON DELETE CASCADE).
  COLLTEST_ASSIGN_OR_RETURN(uint64_t deleted, DeleteBeyondCount(*db_, max_runs));
  if (max_age > absl::ZeroDuration() && max_age != absl::InfiniteDuration()) {
    const int64_t cutoff = now_unix_ms - absl::ToInt64Milliseconds(max_age);
    COLLTEST_ASSIGN_OR_RETURN(const uint64_t old, DeleteOlderThan(*db_, cutoff));
    deleted += old;
  }
  COLLTEST_ASSIGN_OR_RETURN(const uint64_t big, DeleteBeyondBytes(*db_, max_bytes));
  deleted += big;
  COLLTEST_RETURN_IF_ERROR(transaction.Commit());
  return deleted;
}

}  // namespace colltest::store
