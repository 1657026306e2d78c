// GET /api/v1/runs/{run_id}: the reply of GetRun, the one API reply that grows without bound (a
// run of 4,096 cases is ~2.3 MB of JSON, and built whole it cost 25-40 MB while read). It is
// streamed case by case (run_json.h), only a few are served at once (ConcurrencyLimit), and the
// memory a large one freed is given back to the system, since CivetWeb's 16 threads each allocate
// from a malloc arena of their own and glibc keeps what they freed: 16 parallel reads of such a run
// left colltestd 406-656 MiB larger for good.
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "colltest/v1/colltest.pb.h"

struct mg_connection;

namespace colltest::http {

// Sends `run` as a 200 application/json reply (chunked; the body is ToJson(run) and a newline),
// then trims the heap when the reply was large. Returns 200.
int SendRunReply(mg_connection* conn, colltest::v1::RunResult run);

// Gives the memory freed after a reply of `reply_bytes` back to the system when it was large
// (1 MiB and over): malloc_trim walks every arena, a few ms with hundreds of MB free.
void TrimHeapAfter(size_t reply_bytes);

// UNAVAILABLE (503) for a read that found `limit` reads of runs in progress for all of `waited`.
absl::Status RunReadsBusyError(int limit, absl::Duration waited);

// The Retry-After (seconds) sent with that error.
inline constexpr char kRunReadsRetryAfterSeconds[] = "1";

}  // namespace colltest::http
