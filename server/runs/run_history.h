// The runs colltestd knows: the queued and running ones in memory (cases keep landing on them and
// a cancel flag is read between cases), every run in the history database (store/run_store.h),
// written through as it goes: a run is recorded when it is created, each case when it finishes,
// the final state when it ends, so a killed colltestd loses no finished case
// (docs/history.md). A write the database refuses (a full disk) is an error naming the state
// directory and SQLite's reason, counted in colltest_history_write_errors_total; the run is never
// reported as stored when it was not. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "colltest/v1/colltest.pb.h"
#include "server/runs/metrics.h"
#include "store/run_store.h"

namespace colltest::server {

bool IsTerminal(colltest::v1::RunState state);

class RunHistory {
 public:
  // `store` is not owned and must outlive the history. `machine` is recorded with every run.
  // `time_sliced`: runs whose ranks share a GPU are marked RunResult.time_sliced. `metrics`
  // (not owned, may be null) counts the writes the database refused.
  explicit RunHistory(store::RunStore* store, colltest::v1::MachineIdentity machine = {},
                      bool time_sliced = false, Metrics* metrics = nullptr);

  // Records a QUEUED run started by `owner` and returns its id (NewRunId: unguessable). An error
  // when the database cannot record it: the run is then refused, not run unrecorded.
  absl::StatusOr<std::string> Create(const colltest::v1::SweepSpec& spec,
                                     const std::string& backend, const std::string& owner = "");

  // QUEUED -> RUNNING. FAILED_PRECONDITION from any other state, NOT_FOUND for unknown ids; a
  // database error as AddCase's ("history: cannot mark run R RUNNING: ...").
  absl::Status MarkRunning(const std::string& run_id);
  // Appends a finished case (only while RUNNING) and writes it to the database. A database error
  // is returned with its code, "history: cannot store case 37 of run R: database or disk is full
  // (state dir /var/lib/colltest)", and the case is still kept for the run's reply.
  absl::Status AddCase(const std::string& run_id, const colltest::v1::CaseResult& result);
  // Into DONE, CANCELLED or FAILED: the run leaves memory; returns it as finished. When the final
  // state cannot be written, the run is returned FAILED (a CANCELLED or FAILED one keeps its
  // state) with the storage error added to its message, and this history answers that state for
  // it (Get, List, RequestCancel) and writes it again before each later Create and Finish; a
  // colltestd stopped before it could marks it INTERRUPTED at the next start (history_setup.h).
  absl::StatusOr<colltest::v1::RunResult> Finish(const std::string& run_id,
                                                 colltest::v1::RunState state,
                                                 const std::string& message = "");

  // An active run from memory, a finished one from the database.
  absl::StatusOr<colltest::v1::RunResult> Get(const std::string& run_id) const;
  // Who started the run (RunResult.owner).
  absl::StatusOr<std::string> Owner(const std::string& run_id) const;
  // Newest first, filtered and paged (the request is validated by the caller).
  absl::StatusOr<colltest::v1::ListRunsResponse> List(
      const colltest::v1::ListRunsRequest& request) const;

  // Flags the run for cancellation and returns the state it was in. The run's executor notices the
  // flag: a queued run leaves the queue, a running one stops its current case at once. A finished
  // run is left alone and its final state returned.
  absl::StatusOr<colltest::v1::RunState> RequestCancel(const std::string& run_id);
  bool CancelRequested(const std::string& run_id) const;

  // Queued and running runs.
  size_t active() const;
  const colltest::v1::MachineIdentity& machine() const { return machine_; }
  store::RunStore* store() const { return store_; }

 private:
  struct Active {
    colltest::v1::RunResult run;
    bool cancel_requested = false;
  };

  // A final state the database refused: what the run ended as, written again later.
  struct Unrecorded {
    colltest::v1::RunState state = colltest::v1::RUN_STATE_FAILED;
    std::string message;
    int64_t finished_unix_ms = 0;
  };

  // "history: cannot WHAT: REASON (state dir DIR)", with the code of `stored`; counts it.
  absl::Status WriteError(const absl::Status& stored, const std::string& what);
  // Writes the final states the database refused before; keeps those it still refuses.
  void RetryUnrecorded();
  // Applies a final state not yet written to a run read from the database.
  void OverlayUnrecorded(colltest::v1::RunResult& run) const;

  store::RunStore* const store_;
  const colltest::v1::MachineIdentity machine_;
  const bool time_sliced_;
  Metrics* const metrics_;
  const std::string state_dir_;  // named by the errors: where the disk is full
  mutable std::mutex mu_;
  std::map<std::string, Active> active_;
  std::map<std::string, Unrecorded> unrecorded_;
};

}  // namespace colltest::server
