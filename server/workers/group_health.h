// The health state of every worker group the pool has started: SERVING, RECOVERING (respawned
// after a failed case, waiting for its canary) or DEGRADED (the respawn or the canary failed).
// Every change is reported to one listener (the gRPC health service and the metrics).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::server {

using GroupStateListener = std::function<void(const colltest::v1::GroupHealth&)>;

class GroupHealthBook {
 public:
  explicit GroupHealthBook(GroupStateListener listener) : listener_(std::move(listener)) {}

  void Serving(const std::vector<uint32_t>& devices, const std::string& message);
  // A case on `devices` failed: the clock of its recovery starts now. `respawn`: its workers were
  // killed and must be started again (else they were Reset).
  void Failed(const std::vector<uint32_t>& devices, const std::string& why, bool respawn);
  // The respawn and canary passed; the recovery time is measured from the failure.
  void Recovered(const std::vector<uint32_t>& devices, const std::string& how);
  void Degraded(const std::vector<uint32_t>& devices, const std::string& why);

  // None when the group was never started.
  std::optional<colltest::v1::GroupState> StateOf(const std::vector<uint32_t>& devices) const;
  std::vector<colltest::v1::GroupHealth> All() const;

 private:
  struct Record {
    colltest::v1::GroupHealth health;
    absl::Time failed_at = absl::InfinitePast();
  };
  // Applies `change` to the record of `devices` and tells the listener, outside the lock.
  void Update(const std::vector<uint32_t>& devices, colltest::v1::GroupState state,
              const std::string& message, const std::function<void(Record&)>& change = nullptr);

  const GroupStateListener listener_;
  mutable absl::Mutex mu_;
  std::map<std::vector<uint32_t>, Record> records_ ABSL_GUARDED_BY(mu_);
};

}  // namespace colltest::server
