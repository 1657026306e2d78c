#include "server/case_deadline.h"

#include <algorithm>

namespace colltest::server {

absl::Duration CaseDeadline(const colltest::worker::v1::CaseRequest& request,
                            absl::Duration grace) {
  constexpr uint32_t kDefaultTimeoutMs = 5000;
  const uint32_t timeout_ms = request.timeout_ms() == 0 ? kDefaultTimeoutMs : request.timeout_ms();
  const absl::Duration timeout = std::max(absl::Milliseconds(timeout_ms), absl::Seconds(1));
  const double calls = static_cast<double>(request.stress_calls()) +
                       static_cast<double>(request.warmup()) + static_cast<double>(request.iters());
  return timeout * (1.0 + calls / 1000.0) + grace;
}

}  // namespace colltest::server
