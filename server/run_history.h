// The runs colltestd knows: the queued and running ones in memory (cases keep landing on them and
// a cancel flag is read between cases), every run in the history database (store/run_store.h),
// written through as it goes: a run is recorded when it is created, each case when it finishes,
// the final state when it ends, so a killed colltestd loses no finished case
// (docs/history.md). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "colltest/v1/colltest.pb.h"
#include "store/run_store.h"

namespace colltest::server {

bool IsTerminal(colltest::v1::RunState state);

class RunHistory {
 public:
  // `store` is not owned and must outlive the history. `machine` is recorded with every run.
  // `time_sliced`: runs whose ranks share a GPU are marked RunResult.time_sliced.
  explicit RunHistory(store::RunStore* store, colltest::v1::MachineIdentity machine = {},
                      bool time_sliced = false);

  // Records a QUEUED run started by `owner` and returns its id (NewRunId: unguessable). An error
  // when the database cannot record it: the run is then refused, not run unrecorded.
  absl::StatusOr<std::string> Create(const colltest::v1::SweepSpec& spec,
                                     const std::string& backend, const std::string& owner = "");

  // QUEUED -> RUNNING. FAILED_PRECONDITION from any other state, NOT_FOUND for unknown ids.
  absl::Status MarkRunning(const std::string& run_id);
  // Appends a finished case (only while RUNNING) and writes it to the database. A database error
  // is returned, and the case is still kept for the run's reply.
  absl::Status AddCase(const std::string& run_id, const colltest::v1::CaseResult& result);
  // Into DONE, CANCELLED or FAILED: the run leaves memory; returns it as finished.
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

  store::RunStore* const store_;
  const colltest::v1::MachineIdentity machine_;
  const bool time_sliced_;
  mutable std::mutex mu_;
  std::map<std::string, Active> active_;
};

}  // namespace colltest::server
