#include "client/commands/exit_code.h"

#include <algorithm>

#include "client/format/result_view.h"

namespace colltest::client {
namespace {

int ExitCodeForStatus(v1::CaseStatus status) {
  switch (status) {
    case v1::CASE_STATUS_OK:
    case v1::CASE_STATUS_UNSUPPORTED:
      return kExitOk;
    case v1::CASE_STATUS_WRONG:
      return kExitWrong;
    case v1::CASE_STATUS_HANG:
      return kExitHang;
    default:
      return kExitError;
  }
}

}  // namespace

int ExitCodeForRun(const v1::RunResult& run) {
  if (RunAborted(run.state())) return kExitError;
  int code = kExitOk;
  for (const v1::CaseResult& c : run.cases()) code = std::max(code, ExitCodeForStatus(c.status()));
  return code;
}

int ExitCodeForHealth(const v1::HealthResponse& health) {
  // The fields of a BUSY answer hold an earlier verdict, if any: reporting its code would pass a
  // check that did not run (or fail one on old news), so BUSY wins whatever that verdict was.
  if (health.busy()) return kExitBusy;
  int code = ExitCodeForStatus(health.status());
  for (const v1::HealthTarget& t : health.ranks())
    code = std::max(code, ExitCodeForStatus(t.status()));
  for (const v1::HealthTarget& t : health.pairs())
    code = std::max(code, ExitCodeForStatus(t.status()));
  for (const v1::CaseResult& c : health.cases())
    code = std::max(code, ExitCodeForStatus(c.status()));
  return code;
}

int ExitCodeForComparison(const v1::CompareResponse& comparison) {
  bool regressed = comparison.regressed() || comparison.regressions() > 0;
  for (const v1::CaseComparison& c : comparison.cases()) {
    regressed = regressed || c.verdict() == v1::COMPARE_VERDICT_REGRESSION ||
                c.verdict() == v1::COMPARE_VERDICT_ONLY_A;
  }
  return regressed ? kExitRegressed : kExitOk;
}

int ExitCodeForRunAndComparison(int run_code, const v1::CompareResponse& comparison) {
  return run_code != kExitOk ? run_code : ExitCodeForComparison(comparison);
}

}  // namespace colltest::client
