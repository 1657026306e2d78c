#include "worker/fault_plan.h"

#include "common/status_macros.h"

namespace colltest::worker {

absl::StatusOr<FaultPlan> ParseFault(const std::string& spec, uint32_t world) {
  COLLTEST_ASSIGN_OR_RETURN(const common::FaultSpec parsed,
                            common::ParseFaultSpec("fault", spec, world));
  FaultPlan plan;
  plan.kind = parsed.kind;
  plan.rank = parsed.rank;
  plan.delay_us = parsed.delay_us;
  return plan;
}

}  // namespace colltest::worker
