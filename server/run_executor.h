// One run from request to record: validate, queue for the devices, run the cases one at a time
// on the worker pool, merge and record each, and finish the run in the history. Both Run and Sweep
// go through here; they differ only in how they watch progress (RunObserver).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "colltest/v1/colltest.pb.h"
#include "server/metrics.h"
#include "server/owner_quota.h"
#include "server/run_history.h"
#include "server/run_queue.h"
#include "server/tune_table.h"
#include "server/validation.h"
#include "server/worker_pool.h"

namespace colltest::server {

// Receives a run's progress in the executing thread. Every method has a no-op default.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // True once nobody waits for the result any more (client disconnected, deadline passed): the
  // run is then cancelled like one named in a Cancel request.
  virtual bool ClientGone() { return false; }
  // Why ClientGone() is true, for the cancelled run's message.
  virtual std::string ClientGoneReason() { return "the client went away"; }
  // While queued, each time the number of runs ahead of it changes.
  virtual void OnQueued(const std::string& run_id, uint32_t runs_ahead, uint32_t total) {}
  virtual void OnStarted(const std::string& run_id, uint32_t total) {}
  virtual void OnCase(const std::string& run_id, const colltest::v1::CaseResult& result,
                      uint32_t done, uint32_t total) {}
};

// How a run waits for its devices. A health check's runs are kPriority: they go ahead of every
// waiting run, and a running sweep on their devices hands them over between two of its cases and
// continues after them, so a verdict never waits behind other clients' sweeps (docs/neighbours.md).
enum class RunPriority { kNormal, kPriority };

class RunExecutor {
 public:
  // The pointers are not owned and must outlive the executor; `metrics` and `tune` may be null
  // (no tables: `auto` is UNSUPPORTED).
  RunExecutor(ServerLimits limits, WorkerPool* pool, RunHistory* history, DeviceArbiter* arbiter,
              Metrics* metrics = nullptr, const TuneTables* tune = nullptr);

  // Returns the run as recorded, in state DONE, CANCELLED (stopped after a case), or FAILED (no
  // case could be run at all). Errors: the validation error (nothing is recorded), or CANCELLED
  // when the run was cancelled while still queued (recorded as CANCELLED with no cases). `owner`
  // is recorded as the run's RunResult.owner.
  absl::StatusOr<colltest::v1::RunResult> Execute(const colltest::v1::SweepSpec& spec,
                                                  RunObserver& observer,
                                                  const std::string& owner = "",
                                                  RunPriority priority = RunPriority::kNormal);

  // Asks a run to stop; returns the state it was in. NOT_FOUND for unknown ids.
  absl::StatusOr<colltest::v1::RunState> Cancel(const std::string& run_id);

  // Queued runs are refused (UNAVAILABLE) and running ones stop within about a second, their
  // current case included, so that the server can shut down without waiting for long sweeps.
  void BeginShutdown();

  const ServerLimits& limits() const { return limits_; }

  // Fills each group's last_hang fields from the HANG cases this executor has seen.
  void AddLastHangs(std::vector<colltest::v1::GroupHealth>& groups) const;

 private:
  // Why `run_id` must stop, or "" when it may go on.
  std::string StopReason(const std::string& run_id, RunObserver& observer) const;
  void Count(const colltest::v1::CaseResult& result, const std::vector<uint32_t>& devices);
  void CountRuns();
  // Runs one case of the plan, resolving `auto` through the tune tables first; nullopt when `stop`
  // stopped it while it ran.
  std::optional<colltest::v1::CaseResult> RunOne(uint32_t index,
                                                 const std::vector<uint32_t>& devices,
                                                 const colltest::worker::v1::CaseRequest& request,
                                                 const std::function<bool()>& stop,
                                                 uint32_t& pool_failures,
                                                 absl::Status& last_failure);

  const ServerLimits limits_;
  WorkerPool* const pool_;
  RunHistory* const history_;
  DeviceArbiter* const arbiter_;
  Metrics* const metrics_;
  const TuneTables* const tune_;
  OwnerQuota quota_;
  std::atomic<bool> shutting_down_{false};
  std::atomic<uint64_t> next_case_id_{1};
  mutable std::mutex hangs_mu_;
  // The last HANG per group (devices): GroupHealth with only the last_hang fields set.
  std::map<std::vector<uint32_t>, colltest::v1::GroupHealth> last_hangs_;
};

}  // namespace colltest::server
