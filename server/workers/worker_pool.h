// The controller's only view of the workers: groups of colltest-worker processes, one per device,
// reached over unix sockets in a private runtime directory. A group is spawned on first use,
// rendezvoused (every rank's buffer handles collected and broadcast), reused for later cases, and
// torn down and respawned after a crash or a missed deadline.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "colltest/v1/colltest.pb.h"
#include "colltest/v1/worker.pb.h"
#include "server/workers/group_health.h"
#include "server/workers/worker_pool_options.h"

namespace colltest::server {

// The GroupHealth.message of a group whose workers exited after idle_timeout, and of one started
// again after that: the normal life of a group, not a recovery.
inline constexpr char kIdleExitMessagePrefix[] = "idle: ";
inline constexpr char kIdleRestartMessage[] = "started again after an idle exit";
bool IsIdleMessage(const colltest::v1::GroupHealth& group);

class WorkerPool {
 public:
  virtual ~WorkerPool() = default;

  // Runs one case on every rank of `devices` (rank i on devices[i]) at once. Always returns one
  // RankResult per rank on success: a rank that died gets ERROR naming it, one that missed the
  // deadline plus grace gets HANG naming it; in both cases the group is torn down and recovered
  // (respawned, then the canary) before the next case on any of its devices runs. A non-OK status
  // means the group could not be started, or failed its canary (UNAVAILABLE, naming the reason).
  // Callers guarantee that no two concurrent calls share a device.
  //
  // `cancelled` is polled while the case runs; once it returns true the ranks are told to stop
  // (killed if they have not within 1 s), the group is reset or respawned and re-canaried, and the
  // call returns CANCELLED: a stopped case has no verdict.
  virtual absl::StatusOr<std::vector<colltest::v1::RankResult>> RunCase(
      absl::Span<const uint32_t> devices, const colltest::worker::v1::CaseRequest& request,
      const std::function<bool()>& cancelled) = 0;
  absl::StatusOr<std::vector<colltest::v1::RankResult>> RunCase(
      absl::Span<const uint32_t> devices, const colltest::worker::v1::CaseRequest& request) {
    return RunCase(devices, request, nullptr);
  }

  // Ends every worker (Shutdown RPC, then SIGKILL after a short grace), reaps them, removes their
  // sockets, their shared-memory segments and the runtime directory. Idempotent.
  virtual void Shutdown() = 0;

  // Worker processes alive now (for tests and metrics).
  virtual std::vector<int> LivePids() const = 0;
  // Workers respawned after a crash or a hang since start.
  virtual uint64_t Restarts() const = 0;
  // Every group started so far, with its state.
  virtual std::vector<colltest::v1::GroupHealth> GroupStates() const = 0;
};

absl::StatusOr<std::unique_ptr<WorkerPool>> CreateWorkerPool(const WorkerPoolOptions& options);

}  // namespace colltest::server
