#include "worker/fault_plan.h"

#include <cstdio>
#include <cstdlib>

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

const std::string& StandingTestFault() {
  static const std::string* const fault = [] {
    const char* spec = std::getenv("COLLTEST_TEST_FAULT");
    auto* text = new std::string(spec == nullptr ? "" : spec);
    if (!text->empty()) {
      std::fprintf(stderr,
                   "colltest-worker: COLLTEST_TEST_FAULT=%s: every case without a fault gets it\n",
                   text->c_str());
    }
    return text;
  }();
  return *fault;
}

}  // namespace colltest::worker
