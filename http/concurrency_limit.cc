#include "http/concurrency_limit.h"

#include <algorithm>

namespace colltest::http {

ConcurrencyLimit::Permit::~Permit() {
  if (limit_ != nullptr) limit_->Release();
}

ConcurrencyLimit::ConcurrencyLimit(int limit) : limit_(std::max(limit, 1)) {}

std::optional<ConcurrencyLimit::Permit> ConcurrencyLimit::Acquire(absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  const auto has_room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return held_ < limit_; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&has_room), wait)) return std::nullopt;
  ++held_;
  return std::optional<Permit>(std::in_place, this);
}

void ConcurrencyLimit::Release() {
  absl::MutexLock lock(&mu_);
  --held_;
}

}  // namespace colltest::http
