// Merging the W per-rank replies of one case into the case's result: the slowest rank sets the
// time, the diff and quant statistics add up. The status, the culprit and the message come from
// server/workers/verdict.h (included here, as every user of a merged case reads its verdict too).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "colltest/v1/colltest.pb.h"
#include "colltest/v1/worker.pb.h"
#include "server/workers/verdict.h"

namespace colltest::server {

// `ranks` are the replies of rank 0 .. W-1 (W = devices.size()) in any order; a missing rank is
// reported as ERROR (NoResultFrom). `index` is the case's position in the expanded sweep.
colltest::v1::CaseResult MergeCase(uint32_t index, absl::Span<const uint32_t> devices,
                                   const colltest::worker::v1::CaseRequest& request,
                                   std::vector<colltest::v1::RankResult> ranks);

// The result of a case that the worker pool could not run at all (`error` is its status).
colltest::v1::CaseResult FailedCase(uint32_t index, absl::Span<const uint32_t> devices,
                                    const colltest::worker::v1::CaseRequest& request,
                                    const absl::Status& error);

// A case the controller answers itself as UNSUPPORTED (`auto` without a tune table), no worker run.
colltest::v1::CaseResult UnsupportedCase(uint32_t index, absl::Span<const uint32_t> devices,
                                         const colltest::worker::v1::CaseRequest& request,
                                         const std::string& reason);

}  // namespace colltest::server
