// How long the controller waits for a rank's answer to one case before declaring it hung.
#pragma once

#include "absl/time/time.h"
#include "colltest/v1/worker.pb.h"

namespace colltest::server {

// deadline = max(timeout, 1 s) * (1 + (stress_calls + warmup + iters) / 5) + grace,
// where timeout is the case's timeout_ms (0 means kDefaultCaseTimeoutMs, common/defaults.h).
//
// The case timeout bounds each wait on the device, where the worker's own watchdog turns a hang
// into a typed HANG result; a worker that stops making progress altogether is found by the
// heartbeat watchdog (worker_group.cc) within timeout + its grace. The host deadline is only the
// backstop for a worker that beats without ever answering, so it must never fire before the
// worker's watchdog would. A case makes warmup + iters timed calls and stress_calls checked calls,
// so the budget grows with the number of calls (one more timeout per thousand calls) rather than
// with the timeout alone. The 1 s floor keeps a tiny timeout from racing the RPC's own overhead;
// `grace` covers reporting and scheduling noise.
absl::Duration CaseDeadline(const colltest::worker::v1::CaseRequest& request, absl::Duration grace);

// The case's own timeout (timeout_ms, 0 meaning kDefaultCaseTimeoutMs): how long one wait may last.
absl::Duration CaseTimeout(const colltest::worker::v1::CaseRequest& request);

}  // namespace colltest::server
