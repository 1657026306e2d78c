// WHERE A VERDICT IS MADE: here, and nowhere else in colltestd. A case's status (OK, UNSUPPORTED,
// WRONG, HANG, ERROR), its culprit (the rank, and its device, that the others waited for) and its
// message are decided from three kinds of input:
//  - the workers' own reports: one RankResult per rank (a HANG names the peer its bounded wait
//    waited for; the device side records it in worker/backends/gpu/device_sync.cuh, the cpu
//    backend in the worker page);
//  - the watchdog's facts about a rank that did not answer (server/workers/case_facts.h, gathered
//  by
//    server/workers/worker_group.cc): it died, could not be reached, stood still, worked on after
//    every peer gave up on it, missed the host deadline, or was torn down with its group;
//  - cancellation and the host deadline itself.
// The rules, with examples, are in docs/verdicts.md. Merging the numbers (timing, diff, bandwidth)
// is server/workers/case_merge.cc; it asks this file for the status and the message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "colltest/v1/colltest.pb.h"
#include "server/workers/case_facts.h"

namespace colltest::server {

// ---- Statuses ----

// Higher is worse: OK < UNSUPPORTED < WRONG < HANG < ERROR. ERROR ranks above HANG because a rank
// that died leaves its peers waiting for it; the death is the cause, the hang its consequence.
int StatusSeverity(colltest::v1::CaseStatus status);

// WRONG, HANG or ERROR: the group needs a reset, a health check stops, a recovery says why.
bool IsFailure(colltest::v1::CaseStatus status);

// ---- One rank ----

// The result of every rank of a case from what the controller saw (rank and device filled in):
// the rank's own report when it answered, else the watchdog's verdict on it. The one rule
// (docs/verdicts.md): a rank that was waiting for a peer when the group was stopped is a HANG
// naming that peer, whoever ran out of time first (its own spin, the watchdog, the host deadline);
// ERROR only for a rank that died, a call that failed in the infrastructure, or a rank torn down
// because another one died.
std::vector<colltest::v1::RankResult> RankVerdicts(const CaseFacts& facts);

// A rank that sent no result at all (a gap in the replies), and a result without a valid status:
// both ERROR.
colltest::v1::RankResult NoResultFrom(uint32_t rank, uint32_t device);
void RequireStatus(colltest::v1::RankResult& result);

// ---- One case ----

struct CaseDecision {
  colltest::v1::CaseStatus status = colltest::v1::CASE_STATUS_OK;
  std::string message;  // empty for OK
};

// The case's status and message from its ranks' results (rank order, every rank present): the
// worst rank decides; a hang is one verdict naming the rank the others waited for; a hang whose
// every waiter waited for a rank that answered WRONG is WRONG; a WRONG that a quantising epilogue's
// codes or scales made names the rule they break ("... (quant rule: rounding)").
CaseDecision CaseVerdict(absl::Span<const colltest::v1::RankResult> ranks);

// A case the worker pool could not run at all (`error`: the group did not start or failed its
// canary): ERROR.
CaseDecision PoolFailureVerdict(const absl::Status& error);

// Why a cancelled case has no verdict, and how its group recovers: "a cancelled case stopped
// mid-protocol" (reset) or "... did not stop within 1 s: killed" (respawned).
std::string CancelledCaseReason(const CaseFacts& facts);

// Why a group needs recovering after a case: "rank 2: <its message>" of the first rank that
// failed (preferring it over the ranks aborted because of it); "" when none failed.
std::string GroupFailureSummary(absl::Span<const colltest::v1::RankResult> ranks);

// ---- Hangs ----

// "rank 1 never arrived: ranks 0, 2, 3 waited for it in lamport phase B", built from every hung
// rank's suspect_peer and phase.
std::string HangVerdict(absl::Span<const colltest::v1::RankResult> ranks);

// True when every rank that hung waited for a rank that answered WRONG (which stopped at its
// first wrong call): the case is WRONG, the hangs are its consequence.
bool HangsFollowWrongRanks(absl::Span<const colltest::v1::RankResult> ranks);

// The one rank a hang is blamed on: the peer every hung rank waited for, or the only rank that
// hung without naming one (it stopped answering). None when the ranks disagree.
std::optional<uint32_t> HangCulprit(absl::Span<const colltest::v1::RankResult> ranks);

// The culprit of a HANG case: HangCulprit of its ranks, with its device (`devices`: the case's
// devices, rank i on devices[i]). None when the case is no HANG or no single rank is to blame.
struct Culprit {
  uint32_t rank = 0;
  uint32_t device = 0;
};
std::optional<Culprit> HangCulpritOf(const colltest::v1::CaseResult& result,
                                     absl::Span<const uint32_t> devices);

}  // namespace colltest::server
