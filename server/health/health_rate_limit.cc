#include "server/health/health_rate_limit.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace colltest::server {
namespace {

// Above this many callers, full buckets are dropped before a new one is added: a full bucket is
// the same as none.
constexpr size_t kBucketsBeforeCleanup = 1024;

}  // namespace

HealthRateLimit::HealthRateLimit(uint32_t per_minute, std::function<absl::Time()> now)
    : per_minute_(per_minute),
      interval_(per_minute == 0 ? absl::ZeroDuration() : absl::Minutes(1) / per_minute),
      now_(std::move(now)) {}

void HealthRateLimit::ForgetFullBuckets(absl::Time now) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    it = it->second <= now ? buckets_.erase(it) : std::next(it);
  }
}

absl::Status HealthRateLimit::Take(const std::string& caller) {
  if (per_minute_ == 0) return absl::OkStatus();
  const absl::Time now = now_();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(caller);
  if (it == buckets_.end()) {
    if (buckets_.size() >= kBucketsBeforeCleanup) ForgetFullBuckets(now);
    it = buckets_.emplace(caller, now).first;
  }
  // The bucket as the time it is full again (GCRA): each check moves it one interval later, and a
  // check is allowed while that stays within the burst of now. Exact integer time: no rounding.
  absl::Time& full_at = it->second;
  const absl::Time next = std::max(full_at, now) + interval_;
  const absl::Time allowed_until = now + interval_ * per_minute_;
  if (next <= allowed_until) {
    full_at = next;
    return absl::OkStatus();
  }
  const absl::Duration wait = absl::Ceil(next - allowed_until, absl::Seconds(1));
  return absl::ResourceExhaustedError(absl::StrCat(
      caller, " may start ", per_minute_, per_minute_ == 1 ? " health check" : " health checks",
      " per minute (colltestd --health-rate-per-caller); retry in ", absl::FormatDuration(wait),
      " (an answer from memory, --max-verdict-age, is not counted)"));
}

}  // namespace colltest::server
