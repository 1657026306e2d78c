// RunStore's baselines: per machine (MachineIdentity.key) and name, the run a comparison takes as
// its reference.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "store/database.h"
#include "store/run_store.h"

namespace colltest::store {
namespace {

using colltest::v1::Baseline;

constexpr char kDefaultName[] = "default";

// Baseline.name: "default" when none was given, here as in the API.
std::string NameOrDefault(const std::string& name) { return name.empty() ? kDefaultName : name; }

constexpr char kColumns[] = "machine_key, name, run_id, set_ms, set_by, hostname";

void ReadBaseline(const Statement& row, Baseline* baseline) {
  baseline->set_machine_key(row.ColumnText(0));
  baseline->set_name(row.ColumnText(1));
  baseline->set_run_id(row.ColumnText(2));
  baseline->set_set_unix_ms(row.ColumnInt(3));
  baseline->set_set_by(row.ColumnText(4));
  baseline->set_hostname(row.ColumnText(5));
}

// How a NOT_FOUND names the machine: its host name when the history knows it, else its key.
absl::StatusOr<std::string> MachineName(Database& db, const std::string& machine_key) {
  COLLTEST_ASSIGN_OR_RETURN(Statement select,
                            db.Prepare("SELECT m.hostname FROM runs r JOIN machines m ON "
                                       "m.key = r.machine_ref WHERE r.machine_key = ? "
                                       "ORDER BY r.seq DESC LIMIT 1",
                                       absl::StrCat("read machine ", machine_key)));
  COLLTEST_ASSIGN_OR_RETURN(const bool row, select.BindText(1, machine_key).Step());
  if (row && !select.ColumnText(0).empty()) return absl::StrCat("host ", select.ColumnText(0));
  return absl::StrCat("machine ", machine_key);
}

}  // namespace

absl::StatusOr<Baseline> RunStore::SetBaseline(const Baseline& baseline) {
  if (baseline.machine_key().empty() || baseline.run_id().empty()) {
    return absl::InvalidArgumentError("SetBaseline: machine_key and run_id are required");
  }
  Baseline stored = baseline;
  stored.set_name(NameOrDefault(baseline.name()));
  std::lock_guard<std::mutex> lock(mu_);
  const std::string purpose =
      absl::StrCat("set baseline ", stored.name(), " of machine ", stored.machine_key());
  COLLTEST_ASSIGN_OR_RETURN(Transaction transaction, Transaction::Begin(db_.get(), purpose));
  // Checked here for a clear NOT_FOUND; the foreign key would refuse it too.
  COLLTEST_ASSIGN_OR_RETURN(Statement find,
                            db_->Prepare("SELECT 1 FROM runs WHERE run_id = ?", purpose));
  COLLTEST_ASSIGN_OR_RETURN(const bool known, find.BindText(1, stored.run_id()).Step());
  if (!known) {
    return absl::NotFoundError(absl::StrCat("run ", stored.run_id(), " is not in the history"));
  }
  COLLTEST_ASSIGN_OR_RETURN(
      Statement upsert,
      db_->Prepare(absl::StrCat("INSERT INTO baselines (", kColumns,
                                ") VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (machine_key, name) DO "
                                "UPDATE SET run_id = excluded.run_id, set_ms = excluded.set_ms, "
                                "set_by = excluded.set_by, hostname = excluded.hostname"),
                   purpose));
  COLLTEST_RETURN_IF_ERROR(upsert.BindText(1, stored.machine_key())
                               .BindText(2, stored.name())
                               .BindText(3, stored.run_id())
                               .BindInt(4, stored.set_unix_ms())
                               .BindText(5, stored.set_by())
                               .BindText(6, stored.hostname())
                               .Run());
  COLLTEST_RETURN_IF_ERROR(transaction.Commit());
  return stored;
}

absl::StatusOr<Baseline> RunStore::GetBaseline(const std::string& machine_key,
                                               const std::string& name) const {
  const std::string wanted = NameOrDefault(name);
  std::lock_guard<std::mutex> lock(mu_);
  COLLTEST_ASSIGN_OR_RETURN(
      Statement select,
      db_->Prepare(
          absl::StrCat("SELECT ", kColumns, " FROM baselines WHERE machine_key = ? AND name = ?"),
          absl::StrCat("read baseline ", wanted, " of machine ", machine_key)));
  COLLTEST_ASSIGN_OR_RETURN(const bool row,
                            select.BindText(1, machine_key).BindText(2, wanted).Step());
  if (!row) {
    COLLTEST_ASSIGN_OR_RETURN(const std::string machine, MachineName(*db_, machine_key));
    return absl::NotFoundError(absl::StrCat("no baseline named \"", wanted, "\" for ", machine));
  }
  Baseline baseline;
  ReadBaseline(select, &baseline);
  return baseline;
}

absl::StatusOr<std::vector<Baseline>> RunStore::ListBaselines(
    const std::string& machine_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  COLLTEST_ASSIGN_OR_RETURN(
      Statement select,
      db_->Prepare(absl::StrCat("SELECT ", kColumns,
                                " FROM baselines WHERE ?1 = '' OR machine_key = ?1 "
                                "ORDER BY machine_key, name"),
                   "list baselines"));
  select.BindText(1, machine_key);
  std::vector<Baseline> baselines;
  while (true) {
    COLLTEST_ASSIGN_OR_RETURN(const bool row, select.Step());
    if (!row) return baselines;
    ReadBaseline(select, &baselines.emplace_back());
  }
}

}  // namespace colltest::store
