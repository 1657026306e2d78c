// How long the controller waits for a rank's answer to one case before declaring it hung.
#pragma once

#include "absl/time/time.h"
#include "colltest/v1/worker.pb.h"

namespace colltest::server {

// The host deadline measures progress (common/worker_page.h `progress`: calls, rows of inputs,
// of references and of checks), not wall time alone:
//
//   - ProgressWindow = 2 * max(timeout, 1 s) + grace: when every rank that has not answered has
//     completed no work for this long, the case is stopped as late. The worker bounds all the
//     waits of one call by the timeout (its own watchdog turns a hang into a typed HANG), and the
//     call's compute completes rows as it goes, so a worker that honours its bounds never stands
//     still this long, however crowded the machine: 8 cpu ranks on 2 cores with a build beside
//     them ran a W = 8 sweep for minutes, and hit a fixed 32 s deadline, while every rank moved.
//   - CaseDeadline = ProgressWindow * (2 + warmup + iters + stress_calls + graph calls): a cap on
//     the wall time for a worker that keeps completing work without ever answering. A rank that
//     stops working altogether is found sooner by the heartbeat watchdog (worker_group.cc).
//
// timeout is the case's timeout_ms (0 means kDefaultCaseTimeoutMs, common/defaults.h), the 1 s
// floor keeps a tiny timeout from racing the RPC's own overhead, and `grace` covers reporting and
// scheduling noise.
absl::Duration ProgressWindow(const colltest::worker::v1::CaseRequest& request,
                              absl::Duration grace);
absl::Duration CaseDeadline(const colltest::worker::v1::CaseRequest& request, absl::Duration grace);

// The case's own timeout (timeout_ms, 0 meaning kDefaultCaseTimeoutMs): how long one wait may last.
absl::Duration CaseTimeout(const colltest::worker::v1::CaseRequest& request);

}  // namespace colltest::server
