// How many health checks one caller may start: a token bucket per caller (CallerKey), holding
// `per_minute` tokens and refilled at `per_minute` a minute, so a caller may start that many at
// once and then one every 60 s / per_minute. Health checks have priority in the device queue
// (run_queue.h); the fair queue bounds what each check of a caller takes from other runs, this
// bounds how many checks a caller makes. A periodic prober or a fleet check, which asks each node
// once, stays far below the default.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace colltest::server {

inline constexpr uint32_t kDefaultHealthRatePerCaller = 30;

class HealthRateLimit {
 public:
  // 0: no limit.
  explicit HealthRateLimit(
      uint32_t per_minute, std::function<absl::Time()> now = [] { return absl::Now(); });

  // Takes one of `caller`'s tokens, or RESOURCE_EXHAUSTED naming the caller, the limit, the flag
  // and how long to wait.
  absl::Status Take(const std::string& caller);

 private:
  // With mu_ held: drops the buckets that are full again, so that a stream of callers that each
  // come once leaves nothing behind.
  void ForgetFullBuckets(absl::Time now);

  const uint32_t per_minute_;
  const absl::Duration interval_;  // one token's refill
  const std::function<absl::Time()> now_;
  std::mutex mu_;
  std::map<std::string, absl::Time> buckets_;  // per caller: when its bucket is full again
};

}  // namespace colltest::server
