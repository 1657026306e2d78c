// In-memory history of runs, keyed by run id: what a run asked for, its state, the cases finished
// so far, and whether someone asked to cancel it. Bounded: the oldest finished runs are forgotten
// first, so a long-lived daemon does not grow without limit. Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::server {

inline constexpr size_t kDefaultHistoryCapacity = 1000;
inline constexpr uint32_t kDefaultListLimit = 50;

bool IsTerminal(colltest::v1::RunState state);

class RunHistory {
 public:
  explicit RunHistory(size_t capacity = kDefaultHistoryCapacity) : capacity_(capacity) {}

  // Records a QUEUED run and returns its id, "r-<unix ms>-<counter>".
  std::string Create(const colltest::v1::SweepSpec& spec, const std::string& backend);

  // QUEUED -> RUNNING. FAILED_PRECONDITION from any other state, NOT_FOUND for unknown ids.
  absl::Status MarkRunning(const std::string& run_id);
  // Appends a finished case (only while RUNNING).
  absl::Status AddCase(const std::string& run_id, const colltest::v1::CaseResult& result);
  // Into DONE, CANCELLED or FAILED; a finished run stays as it is.
  absl::Status Finish(const std::string& run_id, colltest::v1::RunState state,
                      const std::string& message = "");

  absl::StatusOr<colltest::v1::RunResult> Get(const std::string& run_id) const;
  // Newest first; limit 0 means kDefaultListLimit.
  std::vector<colltest::v1::RunSummary> List(uint32_t limit) const;

  // Flags the run for cancellation and returns the state it was in. The run's executor notices the
  // flag: a queued run leaves the queue, a running one stops after its current case. A finished run
  // is left alone and its final state returned.
  absl::StatusOr<colltest::v1::RunState> RequestCancel(const std::string& run_id);
  bool CancelRequested(const std::string& run_id) const;

  size_t size() const;

 private:
  struct Entry {
    colltest::v1::RunResult run;
    bool cancel_requested = false;
  };
  using Order = std::list<std::string>;  // oldest first

  // With mu_ held.
  absl::StatusOr<Entry*> Find(const std::string& run_id);
  void EvictLocked();

  const size_t capacity_;
  mutable std::mutex mu_;
  uint64_t counter_ = 0;
  Order order_;
  std::map<std::string, std::pair<Entry, Order::iterator>> runs_;
};

}  // namespace colltest::server
