// The Health RPC at one of three levels (health_levels.h, docs/health-levels.md): a short profile
// over the whole group and, on request or from level standard on, over every pair of its devices;
// then stress, the hang-detection self test and the bus bandwidth of every pair. Each run goes
// through the RunExecutor (so it queues like any run and lands in the history), and the answer
// (health_report.h) has one verdict per rank and per pair, and one line naming the culprit.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "colltest/v1/colltest.pb.h"
#include "server/health/health_levels.h"
#include "server/runs/run_executor.h"
#include "server/workers/worker_pool.h"

namespace colltest::server {

// Every pair of `devices` once, in rounds of disjoint pairs (the circle method), so that a round
// runs concurrently. Exposed for tests.
std::vector<std::vector<std::pair<uint32_t, uint32_t>>> PairRounds(
    const std::vector<uint32_t>& devices);

// The fault of the group check as it applies to the pair (a, b): a fault naming rank R targets
// device group_devices[R], so it follows that device into the pairs holding it (with its rank in
// the pair) and is dropped from the others; a fault without a rank applies everywhere.
std::string FaultForPair(const std::string& fault, const std::vector<uint32_t>& group_devices,
                         uint32_t a, uint32_t b);

class HealthChecker {
 public:
  // The pointers are not owned and must outlive the checker. `machine` gives the device models
  // and link kinds that `expected` is looked up by (level long); without them every pair is
  // reported without an expected figure.
  // `capabilities`: what the backend announced, which sets the levels' profile.
  HealthChecker(RunExecutor* executor, colltest::worker::v1::Capabilities capabilities,
                colltest::v1::MachineIdentity machine = {}, ExpectedBandwidth expected = {});

  // Errors: INVALID_ARGUMENT naming the field, or what the executor refused (validation,
  // cancellation while queued). Every run of the check is recorded as started by `owner`.
  absl::StatusOr<colltest::v1::HealthResponse> Check(const colltest::v1::HealthRequest& request,
                                                     RunObserver& observer,
                                                     const std::string& owner = "") const;

 private:
  RunExecutor* const executor_;
  const colltest::worker::v1::Capabilities capabilities_;
  const HealthProfile profile_;
  const colltest::v1::MachineIdentity machine_;
  const ExpectedBandwidth expected_;
  // Tells one check's runs from another's in the device queue (PriorityClaim::check).
  mutable std::atomic<uint64_t> next_check_{1};
};

}  // namespace colltest::server
