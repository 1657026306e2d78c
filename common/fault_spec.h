// The fault grammar (docs/design.md section 7): the one parser of SweepSpec.fault and
// HealthRequest.fault, used by the CLI (syntax), colltestd (up front, against the request's world
// size) and the worker (which runs the fault). A fault is one of
//   missing_rank:R  delay_rank:R:US  skip_rearm  poison_staging  skip_canonicalize
//   crash_rank:R    hang_end_sync:R  stall_rank:R
//   quant_amax_before_last_rank  quant_truncate  quant_no_saturation  quant_swap_format
//   quant_block_offset
// with exactly those arguments, R a decimal rank in [0, world), US a decimal number of
// microseconds in 0..kMaxFaultDelayUs, both without sign or leading zeros ("0" but not "00"),
// and the whole text at most kMaxFaultBytes bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace colltest::common {

inline constexpr size_t kMaxFaultBytes = 64;
// A minute: far above any case timeout (colltestd caps those at 600 s per case, but a delay is
// paid before every call), and low enough that a typo cannot park a worker for hours.
inline constexpr uint32_t kMaxFaultDelayUs = 60'000'000;

enum class FaultKind {
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
  // Planted bugs of the quantising epilogues (worker/numerics/quant_breaks.h), on every rank; a
  // case without a quantising epilogue ignores them.
  kQuantAmaxBeforeLastRank,  // quant_amax_before_last_rank  fp8_token's amax misses the last chunk
  kQuantTruncate,            // quant_truncate       codes rounded toward zero
  kQuantNoSaturation,        // quant_no_saturation  NaN codes past the largest finite
  kQuantSwapFormat,          // quant_swap_format    the other FP8 format's codes
  kQuantBlockOffset,         // quant_block_offset   nvfp4 elements take the previous block's scale
};

struct FaultSpec {
  FaultKind kind = FaultKind::kNone;
  int rank = -1;  // -1: the kind takes no rank and applies to every rank
  uint32_t delay_us = 0;

  // Whether the fault is aimed at rank `r`.
  bool Targets(uint32_t r) const { return rank < 0 || static_cast<uint32_t>(rank) == r; }
};

// "" is kNone. `world` 0 means the world size is not known yet (the CLI): the syntax and the
// argument counts are checked, the rank only for being a decimal number. Errors are
// INVALID_ARGUMENT starting with `field` ("spec.fault", "--fault") and listing the grammar.
absl::StatusOr<FaultSpec> ParseFaultSpec(absl::string_view field, absl::string_view text,
                                         uint32_t world);

// The text ParseFaultSpec reads back as `fault` ("" for kNone).
std::string FormatFaultSpec(const FaultSpec& fault);

}  // namespace colltest::common
