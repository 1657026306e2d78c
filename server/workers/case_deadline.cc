#include "server/workers/case_deadline.h"

#include <algorithm>

#include "common/defaults.h"

namespace colltest::server {

absl::Duration CaseTimeout(const colltest::worker::v1::CaseRequest& request) {
  return absl::Milliseconds(request.timeout_ms() == 0 ? kDefaultCaseTimeoutMs
                                                      : request.timeout_ms());
}

absl::Duration CaseDeadline(const colltest::worker::v1::CaseRequest& request,
                            absl::Duration grace) {
  const absl::Duration timeout = std::max(CaseTimeout(request), absl::Seconds(1));
  const double calls = static_cast<double>(request.stress_calls()) +
                       static_cast<double>(request.warmup()) + static_cast<double>(request.iters());
  // The worker bounds every wait of every call by the timeout itself; this host deadline only
  // catches a worker process that stopped answering, so it allows for slow calls (8 cpu ranks on
  // 2 cores run large shapes at a fraction of a second per call).
  return timeout * (1.0 + calls / 5.0) + grace;
}

}  // namespace colltest::server
