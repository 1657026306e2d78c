// RunStore's baselines: per machine (MachineIdentity.key) and name, the run a comparison takes as
// its reference, owned by the caller that created it.
#include <cstdint>
#include <optional>
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

// NOT_FOUND naming the baseline and its machine.
absl::Status NoSuchBaseline(Database& db, const std::string& machine_key, const std::string& name) {
  COLLTEST_ASSIGN_OR_RETURN(const std::string machine, MachineName(db, machine_key));
  return absl::NotFoundError(absl::StrCat("no baseline named \"", name, "\" for ", machine));
}

// The owner of (machine_key, name): nullopt when there is no such baseline, "" when it was set
// before baselines had owners.
absl::StatusOr<std::optional<std::string>> FindOwner(Database& db, const std::string& machine_key,
                                                     const std::string& name,
                                                     const std::string& purpose) {
  COLLTEST_ASSIGN_OR_RETURN(
      Statement select,
      db.Prepare("SELECT owner FROM baselines WHERE machine_key = ? AND name = ?", purpose));
  COLLTEST_ASSIGN_OR_RETURN(const bool row,
                            select.BindText(1, machine_key).BindText(2, name).Step());
  if (!row) return std::nullopt;
  return select.ColumnText(0);
}

// How messages name a baseline: `baseline "fast" of host node-a`.
std::string Describe(const Baseline& baseline) {
  return absl::StrCat("baseline \"", baseline.name(), "\" of ",
                      baseline.hostname().empty() ? "machine " : "host ",
                      baseline.hostname().empty() ? baseline.machine_key() : baseline.hostname());
}

// A runner replacing another's "default" would silently change what every later comparison of
// that owner's CI is judged against; so only the owner, or an admin, may replace a baseline.
absl::Status CheckMayReplace(const Baseline& baseline, const std::string& owner,
                             const BaselineSetter& setter) {
  if (setter.may_replace_any || (!owner.empty() && owner == setter.name)) {
    return absl::OkStatus();
  }
  if (owner.empty()) {
    return absl::PermissionDeniedError(
        absl::StrCat(Describe(baseline),
                     " has no owner (it was set before baselines had owners): only an admin may "
                     "replace it; ",
                     setter.name, " may replace only its own baselines"));
  }
  return absl::PermissionDeniedError(
      absl::StrCat(Describe(baseline), " belongs to ", owner, "; ", setter.name,
                   " may replace only its own baselines (an admin may replace any)"));
}

// Every baseline pins its run against retention, so an owner adding names without end would keep
// the history from being pruned: a new name is refused once the setter owns max_per_owner.
absl::Status CheckMayAdd(Database& db, const Baseline& baseline, const BaselineSetter& setter,
                         const std::string& purpose) {
  if (setter.max_per_owner == 0) return absl::OkStatus();
  COLLTEST_ASSIGN_OR_RETURN(Statement count,
                            db.Prepare("SELECT COUNT(*) FROM baselines WHERE owner = ?", purpose));
  COLLTEST_ASSIGN_OR_RETURN(const bool row, count.BindText(1, setter.name).Step());
  const int64_t owned = row ? count.ColumnInt(0) : 0;
  if (owned < setter.max_per_owner) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      setter.name, " owns ", owned, " baselines, the limit is ", setter.max_per_owner,
      " (colltestd --max-baselines-per-owner): baselines cannot be deleted, so replace one of "
      "its own (SetBaseline with that name) instead of adding \"",
      baseline.name(), "\""));
}

}  // namespace

absl::StatusOr<Baseline> RunStore::SetBaseline(const Baseline& baseline,
                                               const BaselineSetter& setter) {
  if (baseline.machine_key().empty() || baseline.run_id().empty()) {
    return absl::InvalidArgumentError("SetBaseline: machine_key and run_id are required");
  }
  // "" is the owner of the baselines set before owners existed: nobody may become it.
  if (setter.name.empty()) return absl::InvalidArgumentError("SetBaseline: a setter is required");
  Baseline stored = baseline;
  stored.set_name(NameOrDefault(baseline.name()));
  stored.set_set_by(setter.name);
  std::lock_guard<std::mutex> lock(mu_);
  const std::string purpose =
      absl::StrCat("set baseline ", stored.name(), " of machine ", stored.machine_key());
  COLLTEST_ASSIGN_OR_RETURN(Transaction transaction, Transaction::Begin(db_.get(), purpose));
  COLLTEST_ASSIGN_OR_RETURN(const std::optional<std::string> owner,
                            FindOwner(*db_, stored.machine_key(), stored.name(), purpose));
  COLLTEST_RETURN_IF_ERROR(owner.has_value() ? CheckMayReplace(stored, *owner, setter)
                                             : CheckMayAdd(*db_, stored, setter, purpose));
  // Checked here for a clear NOT_FOUND; the foreign key would refuse it too.
  COLLTEST_ASSIGN_OR_RETURN(Statement find,
                            db_->Prepare("SELECT 1 FROM runs WHERE run_id = ?", purpose));
  COLLTEST_ASSIGN_OR_RETURN(const bool known, find.BindText(1, stored.run_id()).Step());
  if (!known) {
    return absl::NotFoundError(absl::StrCat("run ", stored.run_id(), " is not in the history"));
  }
  // A replacement keeps the owner: an admin fixing a runner's baseline leaves it the runner's.
  COLLTEST_ASSIGN_OR_RETURN(
      Statement upsert,
      db_->Prepare(absl::StrCat("INSERT INTO baselines (", kColumns,
                                ", owner) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (machine_key, "
                                "name) DO UPDATE SET run_id = excluded.run_id, set_ms = "
                                "excluded.set_ms, set_by = excluded.set_by, hostname = "
                                "excluded.hostname"),
                   purpose));
  COLLTEST_RETURN_IF_ERROR(upsert.BindText(1, stored.machine_key())
                               .BindText(2, stored.name())
                               .BindText(3, stored.run_id())
                               .BindInt(4, stored.set_unix_ms())
                               .BindText(5, stored.set_by())
                               .BindText(6, stored.hostname())
                               .BindText(7, setter.name)
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
  if (!row) return NoSuchBaseline(*db_, machine_key, wanted);
  Baseline baseline;
  ReadBaseline(select, &baseline);
  return baseline;
}

absl::StatusOr<std::string> RunStore::BaselineOwner(const std::string& machine_key,
                                                    const std::string& name) const {
  const std::string wanted = NameOrDefault(name);
  std::lock_guard<std::mutex> lock(mu_);
  COLLTEST_ASSIGN_OR_RETURN(
      const std::optional<std::string> owner,
      FindOwner(*db_, machine_key, wanted,
                absl::StrCat("read the owner of baseline ", wanted, " of machine ", machine_key)));
  if (owner.has_value()) return *owner;
  return NoSuchBaseline(*db_, machine_key, wanted);
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
