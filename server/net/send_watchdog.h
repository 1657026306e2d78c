// One thread that fires a callback when a send has not completed by its deadline. A sync gRPC
// ServerWriter::Write blocks while the client grants no flow-control window (a client that never
// reads), and nothing inside gRPC bounds it; the stream observer arms this around each Write and
// cancels the call on expiry, which makes the blocked Write return false.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace colltest::server {

class SendWatchdog {
 public:
  explicit SendWatchdog(absl::Duration timeout);
  ~SendWatchdog();
  SendWatchdog(const SendWatchdog&) = delete;
  SendWatchdog& operator=(const SendWatchdog&) = delete;

  absl::Duration timeout() const { return timeout_; }
  // Calls `on_expiry` (from the watchdog's thread) unless Disarm(id) comes within the timeout.
  uint64_t Arm(std::function<void()> on_expiry);
  // After it returns, the callback of `id` is not running and never will.
  void Disarm(uint64_t id);

 private:
  struct Entry {
    absl::Time deadline;
    std::function<void()> on_expiry;
  };
  void Loop();
  bool ShouldWake() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration timeout_;
  absl::Mutex mu_;
  std::map<uint64_t, Entry> armed_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t seen_next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace colltest::server
