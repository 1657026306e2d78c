#include "server/serving_state.h"

#include <algorithm>

namespace colltest::server {

namespace v1 = ::colltest::v1;

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
  absl::MutexLock lock(&mu_);
  health_ = health;
  if (health_ != nullptr) health_->SetServingStatus("", true);
  Apply();
}

void ServingState::Detach() {
  absl::MutexLock lock(&mu_);
  if (health_ != nullptr && !detached_) {
    health_->SetServingStatus("", false);
    health_->SetServingStatus(kCollectiveTestService, false);
  }
  detached_ = true;
}

bool ServingState::AllServing() const {
  absl::MutexLock lock(&mu_);
  return std::all_of(states_.begin(), states_.end(), [](const auto& entry) {
    return entry.second.state == v1::GROUP_STATE_SERVING;
  });
}

void ServingState::Apply() {
  if (health_ == nullptr || detached_) return;
  const bool serving = std::all_of(states_.begin(), states_.end(), [](const auto& entry) {
    return entry.second.state == v1::GROUP_STATE_SERVING;
  });
  health_->SetServingStatus(kCollectiveTestService, serving);
}

}  // namespace colltest::server
