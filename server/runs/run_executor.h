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
#include "server/devices/device_users.h"
#include "server/runs/metrics.h"
#include "server/runs/owner_quota.h"
#include "server/runs/run_history.h"
#include "server/runs/run_queue.h"
#include "server/runs/sweep_plan.h"
#include "server/runs/tune_table.h"
#include "server/runs/validation.h"
#include "server/workers/worker_pool.h"

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

// The label of the health self test's run (server/health/health_levels.h), which plants a missing
// rank on purpose: its HANG says that detection works, not that the node hangs, so it is kept out
// of the hang metrics and of the groups' last_hang.
inline constexpr char kSelfTestLabel[] = "health self test";

class RunExecutor {
 public:
  // The pointers are not owned and must outlive the executor; `metrics`, `tune` and `users` may
  // be null (no tables: `auto` is UNSUPPORTED; no probe: other processes on the devices are not
  // looked for).
  RunExecutor(ServerLimits limits, WorkerPool* pool, RunHistory* history, DeviceArbiter* arbiter,
              Metrics* metrics = nullptr, const TuneTables* tune = nullptr,
              DeviceUsersProbe* users = nullptr);

  // Returns the run as recorded, in state DONE, CANCELLED (stopped after a case), or FAILED (no
  // case could be run at all, or the history could not store a case or the run's state: the run
  // stops at the first such case, and the message is the storage error, run_history.h). Errors: the
  // validation error or the BUSY refusal (other processes use the devices and spec.force is off;
  // device_users.h), both with nothing recorded, or CANCELLED when the run was cancelled while
  // still queued (recorded as CANCELLED with no cases). `owner` is recorded as the run's
  // RunResult.owner. A kNormal run lends its devices to waiting kPriority runs between two of its
  // cases, once per caller's check (a kPriority run's `claim`, run_queue.h).
  absl::StatusOr<colltest::v1::RunResult> Execute(const colltest::v1::SweepSpec& spec,
                                                  RunObserver& observer,
                                                  const std::string& owner = "",
                                                  RunPriority priority = RunPriority::kNormal,
                                                  const PriorityClaim& claim = {});

  // Asks a run to stop; returns the state it was in. NOT_FOUND for unknown ids.
  absl::StatusOr<colltest::v1::RunState> Cancel(const std::string& run_id);

  // Queued runs are refused (UNAVAILABLE) and running ones stop within about a second, their
  // current case included, so that the server can shut down without waiting for long sweeps.
  void BeginShutdown();

  const ServerLimits& limits() const { return limits_; }

  // The pool's groups now, each with its last_hang fields from the HANG cases this executor has
  // seen (ListDevices and HealthResponse.groups).
  std::vector<colltest::v1::GroupHealth> GroupsWithLastHangs() const;

  // The runs holding any of `devices` now ("run r-1 of alice"), for a caller that could not wait.
  std::vector<std::string> Holders(absl::Span<const uint32_t> devices) const {
    return arbiter_->Holders(devices);
  }

 private:
  // The build of the kernel plugin a VARIANT_PLUGIN case ran, as colltestd loaded it.
  colltest::v1::PluginIdentity PluginIdentityOf(
      const colltest::worker::v1::CaseRequest& request) const;
  // What the case loop of one run ended with.
  struct Loop {
    uint32_t done = 0;
    uint32_t stored = 0;  // cases the history stored
    uint32_t pool_failures = 0;
    absl::Status last_failure;
    std::string stop;         // why it was stopped; "" when it was not
    std::string failed_fast;  // why stop_on_failure ended it; "" when it did not
    std::string unstored;     // the history's error that ended it; "" when every case was stored
  };

  // BUSY (device_users.h) when processes other than colltestd and its workers use `devices`.
  absl::Status CheckNoOtherUsers(const colltest::v1::SweepSpec& spec,
                                 const std::vector<uint32_t>& devices) const;
  // Waits for the devices; on CANCELLED finishes the run in the history and says why.
  absl::StatusOr<DeviceArbiter::Lease> Queue(const std::string& id, const std::string& owner,
                                             const std::vector<uint32_t>& devices, uint32_t total,
                                             RunPriority priority, const PriorityClaim& claim,
                                             RunObserver& observer);
  Loop RunCases(const std::string& id, const colltest::v1::SweepSpec& spec, const SweepPlan& plan,
                DeviceArbiter::Lease& lease, RunObserver& observer);
  // Lends the devices to waiting priority runs between two cases; false when the run must stop.
  bool LendBetweenCases(const std::string& id, uint32_t next, DeviceArbiter::Lease& lease,
                        RunObserver& observer, std::string& stop);
  absl::StatusOr<colltest::v1::RunResult> FinishRun(const std::string& id, uint32_t total,
                                                    const Loop& loop);
  // Why `run_id` must stop, or "" when it may go on.
  std::string StopReason(const std::string& run_id, RunObserver& observer) const;
  // `planted`: the run is the self test (kSelfTestLabel); its HANG is not counted as one.
  void Count(const colltest::v1::CaseResult& result, const std::vector<uint32_t>& devices,
             bool planted);
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
  DeviceUsersProbe* const users_;
  OwnerQuota quota_;
  std::atomic<bool> shutting_down_{false};
  std::atomic<uint64_t> next_case_id_{1};
  mutable std::mutex hangs_mu_;
  // The last HANG per group (devices): GroupHealth with only the last_hang fields set.
  std::map<std::vector<uint32_t>, colltest::v1::GroupHealth> last_hangs_;
};

}  // namespace colltest::server
