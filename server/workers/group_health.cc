#include "server/workers/group_health.h"

#include "absl/time/clock.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

void GroupHealthBook::Update(const std::vector<uint32_t>& devices, v1::GroupState state,
                             const std::string& message,
                             const std::function<void(Record&)>& change) {
  v1::GroupHealth snapshot;
  {
    absl::MutexLock lock(&mu_);
    Record& record = records_[devices];
    v1::GroupHealth& health = record.health;
    if (health.devices().empty()) health.mutable_devices()->Add(devices.begin(), devices.end());
    if (health.state() != state) health.set_since_unix_ms(absl::ToUnixMillis(absl::Now()));
    health.set_state(state);
    health.set_message(message);
    if (change) change(record);
    snapshot = health;
  }
  if (listener_) listener_(snapshot);
}

void GroupHealthBook::Serving(const std::vector<uint32_t>& devices, const std::string& message) {
  Update(devices, v1::GROUP_STATE_SERVING, message);
}

void GroupHealthBook::Failed(const std::vector<uint32_t>& devices, const std::string& why,
                             bool respawn) {
  Update(devices, v1::GROUP_STATE_RECOVERING, why, [respawn](Record& record) {
    record.failed_at = absl::Now();
    record.health.set_recoveries(record.health.recoveries() + 1);
    if (respawn) record.health.set_respawns(record.health.respawns() + 1);
  });
}

void GroupHealthBook::Recovered(const std::vector<uint32_t>& devices, const std::string& how) {
  Update(devices, v1::GROUP_STATE_SERVING, how, [](Record& record) {
    if (record.failed_at != absl::InfinitePast()) {
      record.health.set_last_recovery_ms(
          absl::ToDoubleMilliseconds(absl::Now() - record.failed_at));
    }
  });
}

void GroupHealthBook::Degraded(const std::vector<uint32_t>& devices, const std::string& why) {
  Update(devices, v1::GROUP_STATE_DEGRADED, why);
}

std::optional<v1::GroupState> GroupHealthBook::StateOf(const std::vector<uint32_t>& devices) const {
  absl::MutexLock lock(&mu_);
  auto it = records_.find(devices);
  if (it == records_.end()) return std::nullopt;
  return it->second.health.state();
}

std::vector<v1::GroupHealth> GroupHealthBook::All() const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::GroupHealth> out;
  for (const auto& [devices, record] : records_) out.push_back(record.health);
  return out;
}

}  // namespace colltest::server
