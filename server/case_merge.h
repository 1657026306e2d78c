// Merging the W per-rank replies of one case into the case's result: the worst rank decides the
// status, the slowest rank the time, and a hang is turned into one verdict naming the rank that
// the others waited for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "colltest/v1/colltest.pb.h"
#include "colltest/v1/worker.pb.h"

namespace colltest::server {

// Higher is worse: OK < UNSUPPORTED < WRONG < HANG < ERROR. ERROR ranks above HANG because a rank
// that died leaves its peers waiting for it; the death is the cause, the hang its consequence.
int StatusSeverity(colltest::v1::CaseStatus status);

// `ranks` are the replies of rank 0 .. W-1 (W = devices.size()) in any order; a missing rank is
// reported as ERROR. `index` is the case's position in the expanded sweep.
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

// "rank 1 never arrived: ranks 0, 2, 3 waited for it in lamport phase B", built from every hung
// rank's suspect_peer and phase. Exposed for tests.
std::string HangVerdict(absl::Span<const colltest::v1::RankResult> ranks);

// True when every rank that hung waited for a rank that answered WRONG (which stopped at its
// first wrong call): the case is WRONG, the hangs are its consequence. Exposed for tests.
bool HangsFollowWrongRanks(absl::Span<const colltest::v1::RankResult> ranks);

// The one rank a hang is blamed on: the peer every hung rank waited for, or the only rank that
// hung without naming one (it stopped answering). None when the ranks disagree.
std::optional<uint32_t> HangCulprit(absl::Span<const colltest::v1::RankResult> ranks);

}  // namespace colltest::server
