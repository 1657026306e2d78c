#include "common/fault_spec.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "common/text.h"

namespace colltest::common {
namespace {

struct KnownFault {
  absl::string_view name;
  FaultKind kind;
  size_t args;  // after the name: 0, the rank, or the rank and the delay
};

constexpr KnownFault kKnownFaults[] = {
    {"missing_rank", FaultKind::kMissingRank, 1},
    {"delay_rank", FaultKind::kDelayRank, 2},
    {"skip_rearm", FaultKind::kSkipRearm, 0},
    {"poison_staging", FaultKind::kPoisonStaging, 0},
    {"skip_canonicalize", FaultKind::kSkipCanonicalize, 0},
    {"crash_rank", FaultKind::kCrashRank, 1},
    {"hang_end_sync", FaultKind::kHangEndSync, 1},
    {"stall_rank", FaultKind::kStallRank, 1},
    {"quant_amax_before_last_rank", FaultKind::kQuantAmaxBeforeLastRank, 0},
    {"quant_truncate", FaultKind::kQuantTruncate, 0},
    {"quant_no_saturation", FaultKind::kQuantNoSaturation, 0},
    {"quant_swap_format", FaultKind::kQuantSwapFormat, 0},
    {"quant_block_offset", FaultKind::kQuantBlockOffset, 0},
};

std::string Usage(const KnownFault& known) {
  if (known.args == 0) return std::string(known.name);
  return absl::StrCat(known.name, known.args == 1 ? ":R" : ":R:US");
}

std::string Grammar(uint32_t world) {
  std::string grammar = "expected one of ";
  for (const KnownFault& known : kKnownFaults) {
    absl::StrAppend(&grammar, known.kind == kKnownFaults[0].kind ? "" : ", ", Usage(known));
  }
  absl::StrAppend(&grammar, "; R a rank ",
                  world > 0 ? absl::StrCat("in 0..", world - 1) : std::string("(0 or more)"),
                  ", US microseconds in 0..", kMaxFaultDelayUs);
  return grammar;
}

absl::Status FaultError(absl::string_view field, absl::string_view text, uint32_t world,
                        absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": '", EscapeForTerminal(text), "': ", what, " (", Grammar(world), ")"));
}

// A plain decimal number in its one canonical spelling: absl::SimpleAtoi alone would also take
// "+1", " 1" and "01". One spelling per value keeps FormatFaultSpec(ParseFaultSpec(x)) == x, so
// the fault a client asked for is the fault the history and the logs show.
bool ParseDecimal(absl::string_view text, uint32_t& value) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(text, &value);
}

absl::Status ParseArguments(absl::string_view field, absl::string_view text, uint32_t world,
                            const std::vector<absl::string_view>& parts, FaultSpec& fault) {
  if (parts.size() >= 2) {
    uint32_t rank = 0;
    if (!ParseDecimal(parts[1], rank)) {
      return FaultError(field, text, world,
                        absl::StrCat("the rank '", EscapeForTerminal(parts[1]),
                                     "' is not a decimal number without leading zeros"));
    }
    if (world > 0 && rank >= world) {
      return FaultError(
          field, text, world,
          absl::StrCat("rank ", rank, " is out of range: the world has ", world, " ranks"));
    }
    fault.rank = static_cast<int>(rank);
  }
  if (parts.size() == 3) {
    uint32_t delay = 0;
    if (!ParseDecimal(parts[2], delay) || delay > kMaxFaultDelayUs) {
      return FaultError(field, text, world,
                        absl::StrCat("the delay '", EscapeForTerminal(parts[2]),
                                     "' is not a decimal number of microseconds in 0..",
                                     kMaxFaultDelayUs, " without leading zeros"));
    }
    fault.delay_us = delay;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FaultSpec> ParseFaultSpec(absl::string_view field, absl::string_view text,
                                         uint32_t world) {
  FaultSpec fault;
  // First, and without echoing the text: a megabyte of fault would otherwise come back in the
  // message.
  if (text.size() > kMaxFaultBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", text.size(), " bytes, the limit is ", kMaxFaultBytes));
  }
  if (text.empty()) return fault;
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  for (const KnownFault& known : kKnownFaults) {
    if (parts[0] != known.name) continue;
    if (parts.size() != known.args + 1) {
      return FaultError(field, text, world,
                        absl::StrCat(known.name, " takes ", known.args,
                                     known.args == 1 ? " argument" : " arguments", " (",
                                     Usage(known), "), got ", parts.size() - 1));
    }
    fault.kind = known.kind;
    COLLTEST_RETURN_IF_ERROR(ParseArguments(field, text, world, parts, fault));
    return fault;
  }
  return FaultError(field, text, world,
                    absl::StrCat("unknown fault kind '", EscapeForTerminal(parts[0]), "'"));
}

std::string FormatFaultSpec(const FaultSpec& fault) {
  for (const KnownFault& known : kKnownFaults) {
    if (known.kind != fault.kind) continue;
    if (known.args == 0) return std::string(known.name);
    if (known.args == 1) return absl::StrCat(known.name, ":", fault.rank);
    return absl::StrCat(known.name, ":", fault.rank, ":", fault.delay_us);
  }
  return "";
}

}  // namespace colltest::common
