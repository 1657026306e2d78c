#include "server/runs/owner_quota.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/net/caller_key.h"

namespace colltest::server {

OwnerQuota::Slot::~Slot() {
  if (quota_ != nullptr) quota_->Give(owner_);
}

absl::StatusOr<OwnerQuota::Slot> OwnerQuota::Take(const std::string& owner) {
  // With authentication off the owner is "peer:ipv4:A:PORT", a new name for every connection
  // (`colltest` opens one per call): counted by port, 40 stalled runs of one client took 40
  // slots under a limit of 16. CallerKey drops the port.
  std::string key = CallerKey(owner);
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t& count = active_[key];
  if (max_ > 0 && count >= max_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        key.empty() ? "this caller" : key, " has ", count, " runs queued or running, the limit is ",
        max_, " (colltestd --max-active-runs-per-owner); wait for one to finish"));
  }
  ++count;
  return Slot(this, std::move(key));
}

uint32_t OwnerQuota::active(const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find(CallerKey(owner));
  return it == active_.end() ? 0 : it->second;
}

void OwnerQuota::Give(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find(owner);
  if (it == active_.end()) return;
  if (--it->second == 0) active_.erase(it);
}

}  // namespace colltest::server
