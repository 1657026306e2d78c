// The run history on disk: an embedded SQLite database (WAL mode) under colltestd's state
// directory, holding every run with its request, every case result with its per-rank figures, the
// machine each run ran on, and the baselines. Schema and migrations: store/schema.h; layout and
// retention: docs/history.md. Thread-safe (one connection behind a mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::store {

inline constexpr uint32_t kDefaultListLimit = 50;
inline constexpr uint32_t kMaxListLimit = 1000;

// Who sets a baseline, and the rules it is held to (docs/history.md, "Baselines and their owners").
// A baseline is owned by the caller that created it; replacing it keeps that owner.
struct BaselineSetter {
  // The caller as colltestd counts it (server/net/caller_key.h): recorded as set_by and as the
  // owner.
  std::string name;
  bool may_replace_any = false;  // an admin: may replace baselines of others and of nobody
  // Baselines one owner may hold, over every machine; 0: no bound. At the bound an owner may still
  // replace its own baselines (there is no way to delete one), only not add a name.
  uint32_t max_per_owner = 0;
};

class Database;  // store/database.h

class RunStore {
 public:
  // Opens the database at `path`, creating it when missing (":memory:" keeps it in memory), in WAL
  // mode with synchronous=NORMAL (a committed transaction survives a kill of the process), and
  // migrates an older schema in one transaction. Refuses, naming the file and what to do, a file
  // that is not a database or fails its integrity check, one written by a newer schema, and one it
  // cannot write. It never deletes or rewrites a database it refuses.
  static absl::StatusOr<std::unique_ptr<RunStore>> Open(const std::string& path);
  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  const std::string& path() const { return path_; }
  int schema_version() const;

  // A new run as RunHistory creates it: id, state, spec, backend, owner, created time, machine
  // (recorded once per MachineIdentity.key), and where its ranks were placed (ranks_per_gpu,
  // time_sliced: GetRun returns them, and compare and baselines match on them). `run.cases` must
  // be empty. ALREADY_EXISTS for a known id.
  absl::Status InsertRun(const colltest::v1::RunResult& run);
  // Appends one finished case and updates the run's counters in one transaction: once this
  // returns, the case survives a SIGKILL of colltestd. NOT_FOUND for an unknown run.
  absl::Status AddCase(const std::string& run_id, const colltest::v1::CaseResult& result);
  // Sets the state and message; a terminal state also sets finished_unix_ms.
  absl::Status SetState(const std::string& run_id, colltest::v1::RunState state,
                        const std::string& message, int64_t finished_unix_ms);

  // The run with its cases in index order and its machine. NOT_FOUND naming the id.
  absl::StatusOr<colltest::v1::RunResult> GetRun(const std::string& run_id) const;
  // Newest first, filtered as the request says (label, state, since, variant), `limit` per page
  // (0: kDefaultListLimit; above kMaxListLimit: INVALID_ARGUMENT naming `limit`). A page token it
  // did not issue is INVALID_ARGUMENT naming `page_token`. No case is read.
  absl::StatusOr<colltest::v1::ListRunsResponse> ListRuns(
      const colltest::v1::ListRunsRequest& request) const;

  // At start: every QUEUED or RUNNING run (left by a colltestd that was killed) becomes
  // INTERRUPTED with `message` and finished at `now_unix_ms`; returns their ids.
  absl::StatusOr<std::vector<std::string>> MarkInterrupted(const std::string& message,
                                                           int64_t now_unix_ms);
  // Retention: deletes finished runs (and their cases) beyond the newest `max_runs` (0: no bound),
  // those created before now - `max_age` (zero: no bound), and the oldest beyond `max_bytes` of
  // serialized cases counted from the newest (0: no bound). A run that is some baseline, or that
  // is QUEUED or RUNNING, is never deleted. Returns how many runs were deleted.
  absl::StatusOr<uint64_t> Prune(uint64_t max_runs, absl::Duration max_age, uint64_t max_bytes,
                                 int64_t now_unix_ms);

  // Sets (or replaces) the baseline (machine_key, name) -> run_id for `setter`, whose name becomes
  // set_by (and the owner of a new baseline); the other fields are stored as given. Returns what
  // was stored. PERMISSION_DENIED naming the baseline, its owner and the rule when the setter may
  // not replace it; RESOURCE_EXHAUSTED naming the bound when a new name would take the setter
  // past setter.max_per_owner.
  absl::StatusOr<colltest::v1::Baseline> SetBaseline(const colltest::v1::Baseline& baseline,
                                                     const BaselineSetter& setter);
  // The owner of a baseline ("" for one set before baselines had owners); NOT_FOUND as
  // GetBaseline.
  absl::StatusOr<std::string> BaselineOwner(const std::string& machine_key,
                                            const std::string& name) const;
  // NOT_FOUND naming the name and the machine's host name (or key) when there is none.
  absl::StatusOr<colltest::v1::Baseline> GetBaseline(const std::string& machine_key,
                                                     const std::string& name) const;
  // Every baseline, or those of one machine; ordered by machine key, then name.
  absl::StatusOr<std::vector<colltest::v1::Baseline>> ListBaselines(
      const std::string& machine_key) const;

  absl::StatusOr<uint64_t> CountRuns() const;
  absl::StatusOr<uint64_t> CountCases() const;

 private:
  RunStore(std::string path, std::unique_ptr<Database> db);

  const std::string path_;
  // One connection for every caller: SQLite's own locking keeps one call whole, not a
  // transaction of several statements, so every method holds mu_ from its first statement to its
  // last.
  mutable std::mutex mu_;
  std::unique_ptr<Database> db_;
  int schema_version_ = 0;  // set by Open, after the migrations
};

}  // namespace colltest::store
