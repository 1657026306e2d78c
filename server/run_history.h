// In-memory history of runs, keyed by run id: what a run asked for, who started it, its state, the
// cases finished so far, and whether someone asked to cancel it. Bounded by a number of runs and by
// their serialized size, since one sweep of 4,096 cases weighs as much as thousands of small runs:
// the oldest finished runs are forgotten first, so a long-lived daemon does not grow without limit.
// A finished run is kept serialized, since a decoded one holds about 3.1 times its serialized size:
// its bytes are what the bound counts, and what the process holds. Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::server {

inline constexpr size_t kDefaultHistoryCapacity = 1000;
// See docs/security.md ("History bounds") for the flood that sets it.
inline constexpr uint64_t kDefaultHistoryMaxBytes = uint64_t{128} << 20;
inline constexpr uint32_t kDefaultListLimit = 50;

bool IsTerminal(colltest::v1::RunState state);

class RunHistory {
 public:
  // At most `capacity` runs and `max_bytes` of serialized RunResults, active runs excepted: they
  // are never dropped (their executor still writes to them), so the bounds may be exceeded while
  // they run; they are bounded by the server's threads.
  explicit RunHistory(size_t capacity = kDefaultHistoryCapacity,
                      uint64_t max_bytes = kDefaultHistoryMaxBytes)
      : capacity_(capacity), max_bytes_(max_bytes) {}

  // Records a QUEUED run started by `owner` and returns its id (NewRunId: unguessable).
  std::string Create(const colltest::v1::SweepSpec& spec, const std::string& backend,
                     const std::string& owner = "");

  // QUEUED -> RUNNING. FAILED_PRECONDITION from any other state, NOT_FOUND for unknown ids.
  absl::Status MarkRunning(const std::string& run_id);
  // Appends a finished case (only while RUNNING).
  absl::Status AddCase(const std::string& run_id, const colltest::v1::CaseResult& result);
  // Into DONE, CANCELLED or FAILED; a finished run stays as it is.
  absl::Status Finish(const std::string& run_id, colltest::v1::RunState state,
                      const std::string& message = "");

  // A finished run is parsed from its stored bytes, outside the lock.
  absl::StatusOr<colltest::v1::RunResult> Get(const std::string& run_id) const;
  // Who started the run (RunResult.owner), without copying its cases.
  absl::StatusOr<std::string> Owner(const std::string& run_id) const;
  // Newest first; limit 0 means kDefaultListLimit. Finished runs answer with the summary made when
  // they finished: no run is parsed.
  std::vector<colltest::v1::RunSummary> List(uint32_t limit) const;

  // Flags the run for cancellation and returns the state it was in. The run's executor notices the
  // flag: a queued run leaves the queue, a running one stops its current case at once. A finished
  // run is left alone and its final state returned.
  absl::StatusOr<colltest::v1::RunState> RequestCancel(const std::string& run_id);
  bool CancelRequested(const std::string& run_id) const;

  size_t size() const;
  // Serialized size of every run held, as accounted on Create, AddCase and Finish.
  uint64_t bytes() const;
  // Runs held as decoded messages: the queued and running ones, never a finished one.
  size_t decoded_runs() const;

 private:
  struct Entry {
    // Queued or running: a message, since cases keep landing on it. Null once finished.
    std::unique_ptr<colltest::v1::RunResult> active;
    // Finished: the serialized RunResult, shared with a Get that parses it after the run is
    // evicted, and the summary List answers with.
    std::shared_ptr<const std::string> finished;
    colltest::v1::RunSummary summary;
    uint64_t bytes = 0;  // serialized size, kept up to date incrementally while active
    bool cancel_requested = false;

    colltest::v1::RunState state() const { return active ? active->state() : summary.state(); }
  };
  using Order = std::list<std::string>;  // oldest first

  // With mu_ held.
  absl::StatusOr<Entry*> Find(const std::string& run_id);
  // Find, and FAILED_PRECONDITION unless the run is in state `want`.
  absl::StatusOr<Entry*> FindIn(const std::string& run_id, colltest::v1::RunState want);
  // Drops the oldest finished runs, except `keep`, until both bounds hold (or only active runs
  // and `keep` are left).
  void EvictLocked(const std::string& keep = "");
  bool OverBoundsLocked() const;
  absl::Status NotFound(const std::string& run_id) const;

  const size_t capacity_;
  const uint64_t max_bytes_;
  mutable std::mutex mu_;
  uint64_t bytes_ = 0;  // sum of Entry::bytes
  Order order_;
  std::map<std::string, std::pair<Entry, Order::iterator>> runs_;
};

}  // namespace colltest::server
