#include "server/net/send_watchdog.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"

namespace colltest::server {

SendWatchdog::SendWatchdog(absl::Duration timeout)
    : timeout_(timeout), thread_([this] { Loop(); }) {}

SendWatchdog::~SendWatchdog() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

uint64_t SendWatchdog::Arm(std::function<void()> on_expiry) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  armed_.emplace(id, Entry{absl::Now() + timeout_, std::move(on_expiry)});
  return id;
}

void SendWatchdog::Disarm(uint64_t id) {
  // The callbacks run under mu_, so once the lock is ours none of them is running.
  absl::MutexLock lock(&mu_);
  armed_.erase(id);
}

bool SendWatchdog::ShouldWake() const { return stopping_ || next_id_ != seen_next_id_; }

void SendWatchdog::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    absl::Time next = absl::InfiniteFuture();
    for (const auto& [id, entry] : armed_) next = std::min(next, entry.deadline);
    // An Arm wakes the loop so that its deadline is counted (Disarm need not: an early wake finds
    // nothing due).
    seen_next_id_ = next_id_;
    mu_.AwaitWithDeadline(absl::Condition(this, &SendWatchdog::ShouldWake), next);
    const absl::Time now = absl::Now();
    for (auto it = armed_.begin(); it != armed_.end();) {
      if (it->second.deadline > now) {
        ++it;
        continue;
      }
      it->second.on_expiry();
      it = armed_.erase(it);
    }
  }
}

}  // namespace colltest::server
