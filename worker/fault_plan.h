// Fault injection for a case (DESIGN section 7), parsed from CaseRequest.fault. colltestd forwards
// a fault only when started with --allow-fault-injection.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace colltest::worker {

struct FaultPlan {
  enum class Kind {
    kNone,
    kMissingRank,       // missing_rank:R   rank R never runs the case
    kDelayRank,         // delay_rank:R:US  rank R sleeps US microseconds before every call
    kSkipRearm,         // skip_rearm       Lamport consumers leave consumed packs un-armed
    kPoisonStaging,     // poison_staging   Lamport staging holds data, not sentinels, at the start
    kSkipCanonicalize,  // skip_canonicalize  producers store -0.0 as is
    kCrashRank,         // crash_rank:R     rank R's worker dies in the middle of the case
    kHangEndSync,       // hang_end_sync:R  rank R never arrives at an end barrier
    kStallRank,         // stall_rank:R     rank R's worker stops (SIGSTOP) mid-case: alive but
                        //                  silent, found only by the controller's watchdog
  };
  Kind kind = Kind::kNone;
  int rank = -1;  // -1: every rank
  uint32_t delay_us = 0;

  bool Targets(uint32_t r) const { return rank < 0 || static_cast<uint32_t>(rank) == r; }
};

absl::StatusOr<FaultPlan> ParseFault(const std::string& spec, uint32_t world);

}  // namespace colltest::worker
