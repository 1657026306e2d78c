// RunStore: opening, and a run's life (created, its cases, its end) and reading it back. Listing:
// run_list.cc; retention and restart: retention.cc; baselines: baselines.cc.
#include "store/run_store.h"

#include <google/protobuf/util/json_util.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/stable_hash.h"
#include "common/status_macros.h"
#include "store/database.h"
#include "store/open.h"
#include "store/schema.h"

namespace colltest::store {
namespace {

using colltest::v1::CaseResult;
using colltest::v1::CaseStatus;
using colltest::v1::MachineIdentity;
using colltest::v1::RunResult;
using colltest::v1::RunState;
using colltest::v1::SweepSpec;

bool IsTerminal(RunState state) {
  return state == colltest::v1::RUN_STATE_DONE || state == colltest::v1::RUN_STATE_CANCELLED ||
         state == colltest::v1::RUN_STATE_FAILED || state == colltest::v1::RUN_STATE_INTERRUPTED;
}

// RunSummary.ok: the case passed, or its variant does not apply there (not a failure).
bool CountsOk(CaseStatus status) {
  return status == colltest::v1::CASE_STATUS_OK || status == colltest::v1::CASE_STATUS_UNSUPPORTED;
}

bool CountsFailed(CaseStatus status) {
  return status == colltest::v1::CASE_STATUS_WRONG || status == colltest::v1::CASE_STATUS_HANG ||
         status == colltest::v1::CASE_STATUS_ERROR;
}

absl::Status RunNotFound(const std::string& run_id) {
  return absl::NotFoundError(absl::StrCat("run ", run_id, " is not in the history"));
}

absl::StatusOr<int64_t> FindRunSeq(Database& db, const std::string& run_id,
                                   absl::string_view purpose) {
  COLLTEST_ASSIGN_OR_RETURN(Statement find,
                            db.Prepare("SELECT seq FROM runs WHERE run_id = ?", purpose));
  COLLTEST_ASSIGN_OR_RETURN(const bool row, find.BindText(1, run_id).Step());
  if (!row) return RunNotFound(run_id);
  return find.ColumnInt(0);
}

// A stored proto that does not parse means the file was damaged or edited by hand.
absl::Status ParseStored(Database& db, const std::string& bytes, google::protobuf::Message* out,
                         absl::string_view what) {
  if (out->ParseFromString(bytes)) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("history database ", db.path(), ": the stored ", what,
                                          " cannot be read: restore a backup"));
}

// The request as JSON with the proto's field names, so that the sqlite3 shell can read it
// (json_extract(request_json, '$.world_size')).
absl::StatusOr<std::string> SpecJson(const SweepSpec& spec) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(spec, &json, options);
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot write the request as JSON: ", status.message().ToString()));
  }
  return json;
}

// The machines row of one identity: its key, "." and a 64-bit FNV-1a hash of the serialized
// identity. The same machine after a driver upgrade is a new row under the same key.
std::string MachineRef(const MachineIdentity& machine) {
  if (machine.key().empty()) return "";
  return absl::StrCat(machine.key(), ".",
                      absl::Hex(common::Fnv1a(machine.SerializeAsString()), absl::kZeroPad16));
}

// Recorded once per identity: runs on an unchanged machine share one row.
absl::Status RecordMachine(Database& db, const MachineIdentity& machine) {
  if (machine.key().empty()) return absl::OkStatus();
  COLLTEST_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT OR IGNORE INTO machines (key, hostname, identity) VALUES (?, ?, ?)",
                 absl::StrCat("record machine ", machine.hostname())));
  return insert.BindText(1, MachineRef(machine))
      .BindText(2, machine.hostname())
      .BindBlob(3, machine.SerializeAsString())
      .Run();
}

absl::StatusOr<int64_t> InsertRunRow(Database& db, const RunResult& run) {
  COLLTEST_ASSIGN_OR_RETURN(const std::string json, SpecJson(run.spec()));
  COLLTEST_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO runs (run_id, state, label, owner, backend, created_ms, "
                 "finished_ms, message, request_json, spec, machine_key, machine_ref, "
                 "ranks_per_gpu, time_sliced) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
                 absl::StrCat("insert run ", run.run_id())));
  insert.BindText(1, run.run_id())
      .BindInt(2, run.state())
      .BindText(3, run.spec().label())
      .BindText(4, run.owner())
      .BindText(5, run.backend())
      .BindInt(6, run.created_unix_ms())
      .BindInt(7, run.finished_unix_ms())
      .BindText(8, run.message())
      .BindText(9, json)
      .BindBlob(10, run.spec().SerializeAsString())
      .BindText(11, run.machine().key())
      .BindText(12, MachineRef(run.machine()))
      .BindInt(13, run.ranks_per_gpu())
      .BindInt(14, run.time_sliced() ? 1 : 0);
  COLLTEST_RETURN_IF_ERROR(insert.Step().status());
  return insert.ColumnInt(0);
}

absl::Status InsertVariants(Database& db, int64_t seq, const RunResult& run) {
  COLLTEST_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT OR IGNORE INTO run_variants (run_seq, variant) VALUES (?, ?)",
                 absl::StrCat("record the variants of run ", run.run_id())));
  for (const int variant : run.spec().variants()) {
    COLLTEST_RETURN_IF_ERROR(insert.BindInt(1, seq).BindInt(2, variant).Run());
    insert.Reset();
  }
  return absl::OkStatus();
}

absl::Status InsertCaseRow(Database& db, int64_t seq, const std::string& run_id,
                           const CaseResult& result) {
  COLLTEST_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO cases (run_seq, idx, variant, mode, world, m, n, dtype, status, "
                 "median_us, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 absl::StrCat("record case ", result.index(), " of run ", run_id)));
  return insert.BindInt(1, seq)
      .BindInt(2, result.index())
      .BindInt(3, result.variant())
      .BindInt(4, result.mode())
      .BindInt(5, result.world_size())
      .BindInt(6, result.m())
      .BindInt(7, result.n())
      .BindInt(8, result.dtype())
      .BindInt(9, result.status())
      .BindDouble(10, result.timing().median_us())
      .BindBlob(11, result.SerializeAsString())
      .Run();
}

// The run's row and its machine; the cases are read by ReadCases.
absl::StatusOr<int64_t> ReadRunRow(Database& db, const std::string& run_id, RunResult* run) {
  COLLTEST_ASSIGN_OR_RETURN(
      Statement select,
      db.Prepare("SELECT r.seq, r.state, r.spec, r.backend, r.created_ms, r.finished_ms, "
                 "r.message, r.owner, r.machine_key, m.identity, r.ranks_per_gpu, r.time_sliced "
                 "FROM runs r LEFT JOIN machines m ON m.key = r.machine_ref WHERE r.run_id = ?",
                 absl::StrCat("read run ", run_id)));
  COLLTEST_ASSIGN_OR_RETURN(const bool row, select.BindText(1, run_id).Step());
  if (!row) return RunNotFound(run_id);
  run->set_run_id(run_id);
  run->set_state(static_cast<RunState>(select.ColumnInt(1)));
  COLLTEST_RETURN_IF_ERROR(
      ParseStored(db, select.ColumnBlob(2), run->mutable_spec(), "request of run " + run_id));
  run->set_backend(select.ColumnText(3));
  run->set_created_unix_ms(select.ColumnInt(4));
  run->set_finished_unix_ms(select.ColumnInt(5));
  run->set_message(select.ColumnText(6));
  run->set_owner(select.ColumnText(7));
  run->set_ranks_per_gpu(static_cast<uint32_t>(select.ColumnInt(10)));
  run->set_time_sliced(select.ColumnInt(11) != 0);
  if (!select.ColumnIsNull(9)) {
    COLLTEST_RETURN_IF_ERROR(
        ParseStored(db, select.ColumnBlob(9), run->mutable_machine(), "machine of run " + run_id));
  } else if (!select.ColumnText(8).empty()) {
    run->mutable_machine()->set_key(select.ColumnText(8));
  }
  return select.ColumnInt(0);
}

absl::Status ReadCases(Database& db, int64_t seq, RunResult* run) {
  COLLTEST_ASSIGN_OR_RETURN(Statement select,
                            db.Prepare("SELECT result FROM cases WHERE run_seq = ? ORDER BY idx",
                                       absl::StrCat("read the cases of run ", run->run_id())));
  select.BindInt(1, seq);
  while (true) {
    COLLTEST_ASSIGN_OR_RETURN(const bool row, select.Step());
    if (!row) return absl::OkStatus();
    COLLTEST_RETURN_IF_ERROR(
        ParseStored(db, select.ColumnBlob(0), run->add_cases(), "case of run " + run->run_id()));
  }
}

}  // namespace

RunStore::RunStore(std::string path, std::unique_ptr<Database> db)
    : path_(std::move(path)), db_(std::move(db)) {}

RunStore::~RunStore() = default;

absl::StatusOr<std::unique_ptr<RunStore>> RunStore::Open(const std::string& path) {
  COLLTEST_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, OpenHistoryDatabase(path));
  COLLTEST_RETURN_IF_ERROR(Migrate(*db));
  COLLTEST_ASSIGN_OR_RETURN(const int version, SchemaVersion(*db));
  std::unique_ptr<RunStore> store(new RunStore(path, std::move(db)));
  store->schema_version_ = version;
  return store;
}

int RunStore::schema_version() const { return schema_version_; }

absl::Status RunStore::InsertRun(const RunResult& run) {
  if (run.run_id().empty()) return absl::InvalidArgumentError("InsertRun: run_id is empty");
  if (run.cases_size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("InsertRun: run ", run.run_id(), " has ",
                                                   run.cases_size(),
                                                   " cases; add them with AddCase"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  const std::string purpose = absl::StrCat("insert run ", run.run_id());
  COLLTEST_ASSIGN_OR_RETURN(Transaction transaction, Transaction::Begin(db_.get(), purpose));
  const absl::StatusOr<int64_t> existing = FindRunSeq(*db_, run.run_id(), purpose);
  if (existing.ok()) {
    return absl::AlreadyExistsError(
        absl::StrCat("run ", run.run_id(), " is already in the history"));
  }
  if (!absl::IsNotFound(existing.status())) return existing.status();
  COLLTEST_RETURN_IF_ERROR(RecordMachine(*db_, run.machine()));
  COLLTEST_ASSIGN_OR_RETURN(const int64_t seq, InsertRunRow(*db_, run));
  COLLTEST_RETURN_IF_ERROR(InsertVariants(*db_, seq, run));
  return transaction.Commit();
}

absl::Status RunStore::AddCase(const std::string& run_id, const CaseResult& result) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string purpose = absl::StrCat("record case ", result.index(), " of run ", run_id);
  // The case and the run's counters in one transaction: a kill leaves both or neither.
  COLLTEST_ASSIGN_OR_RETURN(Transaction transaction, Transaction::Begin(db_.get(), purpose));
  COLLTEST_ASSIGN_OR_RETURN(const int64_t seq, FindRunSeq(*db_, run_id, purpose));
  COLLTEST_RETURN_IF_ERROR(InsertCaseRow(*db_, seq, run_id, result));
  COLLTEST_ASSIGN_OR_RETURN(
      Statement update,
      db_->Prepare("UPDATE runs SET cases = cases + 1, ok = ok + ?, failed = failed + ?, "
                   "case_bytes = case_bytes + ? WHERE seq = ?",
                   purpose));
  COLLTEST_RETURN_IF_ERROR(update.BindInt(1, CountsOk(result.status()) ? 1 : 0)
                               .BindInt(2, CountsFailed(result.status()) ? 1 : 0)
                               .BindInt(3, static_cast<int64_t>(result.ByteSizeLong()))
                               .BindInt(4, seq)
                               .Run());
  return transaction.Commit();
}

absl::Status RunStore::SetState(const std::string& run_id, RunState state,
                                const std::string& message, int64_t finished_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  COLLTEST_ASSIGN_OR_RETURN(
      Statement update,
      db_->Prepare("UPDATE runs SET state = ?1, message = ?2, "
                   "finished_ms = CASE WHEN ?3 THEN ?4 ELSE finished_ms END WHERE run_id = ?5",
                   absl::StrCat("set the state of run ", run_id)));
  COLLTEST_RETURN_IF_ERROR(update.BindInt(1, state)
                               .BindText(2, message)
                               .BindInt(3, IsTerminal(state) ? 1 : 0)
                               .BindInt(4, finished_unix_ms)
                               .BindText(5, run_id)
                               .Run());
  if (db_->changes() == 0) return RunNotFound(run_id);
  return absl::OkStatus();
}

absl::StatusOr<RunResult> RunStore::GetRun(const std::string& run_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  RunResult run;
  COLLTEST_ASSIGN_OR_RETURN(const int64_t seq, ReadRunRow(*db_, run_id, &run));
  COLLTEST_RETURN_IF_ERROR(ReadCases(*db_, seq, &run));
  return run;
}

absl::StatusOr<uint64_t> RunStore::CountRuns() const {
  std::lock_guard<std::mutex> lock(mu_);
  COLLTEST_ASSIGN_OR_RETURN(const int64_t count,
                            db_->QueryInt("SELECT count(*) FROM runs", "count the runs"));
  return static_cast<uint64_t>(count);
}

absl::StatusOr<uint64_t> RunStore::CountCases() const {
  std::lock_guard<std::mutex> lock(mu_);
  COLLTEST_ASSIGN_OR_RETURN(const int64_t count,
                            db_->QueryInt("SELECT count(*) FROM cases", "count the cases"));
  return static_cast<uint64_t>(count);
}

}  // namespace colltest::store
