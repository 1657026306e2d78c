#include "worker/fault_plan.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace colltest::worker {

absl::StatusOr<FaultPlan> ParseFault(const std::string& spec, uint32_t world) {
  FaultPlan plan;
  if (spec.empty()) return plan;
  const std::vector<std::string> parts = absl::StrSplit(spec, ':');
  struct Known {
    const char* name;
    FaultPlan::Kind kind;
    size_t args;  // after the name
  };
  static const Known kKnown[] = {
      {"missing_rank", FaultPlan::Kind::kMissingRank, 1},
      {"delay_rank", FaultPlan::Kind::kDelayRank, 2},
      {"skip_rearm", FaultPlan::Kind::kSkipRearm, 0},
      {"poison_staging", FaultPlan::Kind::kPoisonStaging, 0},
      {"skip_canonicalize", FaultPlan::Kind::kSkipCanonicalize, 0},
      {"crash_rank", FaultPlan::Kind::kCrashRank, 1},
      {"hang_end_sync", FaultPlan::Kind::kHangEndSync, 1},
      {"stall_rank", FaultPlan::Kind::kStallRank, 1},
  };
  for (const Known& k : kKnown) {
    if (parts[0] != k.name) continue;
    if (parts.size() != k.args + 1) {
      return absl::InvalidArgumentError(absl::StrCat("fault = '", spec, "': ", k.name, " takes ",
                                                     k.args, " argument(s) after ':'"));
    }
    plan.kind = k.kind;
    if (k.args >= 1) {
      uint32_t r = 0;
      if (!absl::SimpleAtoi(parts[1], &r) || r >= world) {
        return absl::InvalidArgumentError(
            absl::StrCat("fault = '", spec, "': rank must be in 0..", world - 1));
      }
      plan.rank = static_cast<int>(r);
    }
    if (k.args == 2 && !absl::SimpleAtoi(parts[2], &plan.delay_us)) {
      return absl::InvalidArgumentError(
          absl::StrCat("fault = '", spec, "': delay must be microseconds"));
    }
    return plan;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "fault = '", spec,
      "': unknown (known: missing_rank:R, delay_rank:R:US, skip_rearm, poison_staging, "
      "skip_canonicalize, crash_rank:R, hang_end_sync:R, stall_rank:R)"));
}

}  // namespace colltest::worker
