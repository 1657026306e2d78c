// Folds the worker groups' states into what outside watchers see: the gRPC health service
// (colltest.v1.CollectiveTest is NOT_SERVING while any group is RECOVERING or DEGRADED; "" stays
// SERVING while the process runs, so "is it up" and "is it healthy" are two questions) and the
// metrics (group state gauges, restarts). Several health services may attach: the main server's
// and the --health-listen server's (health_listener.h) answer alike.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "colltest/v1/colltest.pb.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/net/health_service_names.h"
#include "server/runs/metrics.h"

namespace colltest::server {

class ServingState {
 public:
  explicit ServingState(Metrics* metrics) : metrics_(metrics) {}

  // The worker pool's GroupStateListener; callable from any thread.
  void OnGroupState(const colltest::v1::GroupHealth& group);
  // Once a server runs; applies the states seen so far to `health` and keeps it up to date.
  // `health` must stay valid until Detach. Attaching after Detach sets it NOT_SERVING only.
  void Attach(grpc::HealthCheckServiceInterface* health);
  // At shutdown: every attached service NOT_SERVING, and no further updates.
  void Detach();
  bool AllServing() const;

 private:
  bool AllServingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Apply() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  struct Seen {
    colltest::v1::GroupState state = colltest::v1::GROUP_STATE_UNSPECIFIED;
    uint64_t respawns = 0;
  };

  Metrics* const metrics_;
  mutable absl::Mutex mu_;
  std::map<std::vector<uint32_t>, Seen> states_ ABSL_GUARDED_BY(mu_);
  std::vector<grpc::HealthCheckServiceInterface*> health_services_ ABSL_GUARDED_BY(mu_);
  bool detached_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace colltest::server
