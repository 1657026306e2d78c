#include "server/serving_state.h"

#include <algorithm>

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

void SetNotServing(grpc::HealthCheckServiceInterface* health) {
  health->SetServingStatus("", false);
  health->SetServingStatus(kCollectiveTestService, false);
}

}  // namespace

void ServingState::OnGroupState(const v1::GroupHealth& group) {
  const std::vector<uint32_t> devices(group.devices().begin(), group.devices().end());
  metrics_->SetGroupState(devices, group.state());
  absl::MutexLock lock(&mu_);
  Seen& seen = states_[devices];
  for (uint64_t r = seen.respawns; r < group.respawns(); ++r) metrics_->ObserveRestart();
  seen.respawns = std::max(seen.respawns, group.respawns());
  seen.state = group.state();
  Apply();
}

void ServingState::Attach(grpc::HealthCheckServiceInterface* health) {
  if (health == nullptr) return;
  absl::MutexLock lock(&mu_);
  if (detached_) {
    SetNotServing(health);
    return;
  }
  health_services_.push_back(health);
  health->SetServingStatus("", true);
  health->SetServingStatus(kCollectiveTestService, AllServingLocked());
}

void ServingState::Detach() {
  absl::MutexLock lock(&mu_);
  if (!detached_) {
    for (grpc::HealthCheckServiceInterface* health : health_services_) SetNotServing(health);
  }
  detached_ = true;
  health_services_.clear();  // their servers may be destroyed from now on
}

bool ServingState::AllServing() const {
  absl::MutexLock lock(&mu_);
  return AllServingLocked();
}

bool ServingState::AllServingLocked() const {
  return std::all_of(states_.begin(), states_.end(), [](const auto& entry) {
    return entry.second.state == v1::GROUP_STATE_SERVING;
  });
}

void ServingState::Apply() {
  if (detached_) return;
  const bool serving = AllServingLocked();
  for (grpc::HealthCheckServiceInterface* health : health_services_) {
    health->SetServingStatus(kCollectiveTestService, serving);
  }
}

}  // namespace colltest::server
