#include "server/workers/case_deadline.h"

#include <algorithm>

#include "common/defaults.h"

namespace colltest::server {

absl::Duration CaseTimeout(const colltest::worker::v1::CaseRequest& request) {
  return absl::Milliseconds(request.timeout_ms() == 0 ? kDefaultCaseTimeoutMs
                                                      : request.timeout_ms());
}

absl::Duration ProgressWindow(const colltest::worker::v1::CaseRequest& request,
                              absl::Duration grace) {
  return 2 * std::max(CaseTimeout(request), absl::Seconds(1)) + grace;
}

absl::Duration CaseDeadline(const colltest::worker::v1::CaseRequest& request,
                            absl::Duration grace) {
  // Graph mode adds up to one capture's worth of calls (the untimed replay).
  const int64_t graph = request.mode() == colltest::v1::MODE_GRAPH ? kGraphCalls : 0;
  const int64_t calls =
      int64_t{request.warmup()} + request.iters() + request.stress_calls() + graph;
  return ProgressWindow(request, grace) * (2 + calls);
}

}  // namespace colltest::server
