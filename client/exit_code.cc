#include "client/exit_code.h"

#include <algorithm>

#include "client/result_view.h"

namespace colltest::client {

int ExitCodeForRun(const v1::RunResult& run) {
  if (RunAborted(run.state())) return kExitError;
  int code = kExitOk;
  for (const v1::CaseResult& c : run.cases()) {
    switch (c.status()) {
      case v1::CASE_STATUS_OK:
      case v1::CASE_STATUS_UNSUPPORTED:
        break;
      case v1::CASE_STATUS_WRONG:
        code = std::max(code, kExitWrong);
        break;
      case v1::CASE_STATUS_HANG:
        code = std::max(code, kExitHang);
        break;
      default:
        return kExitError;
    }
  }
  return code;
}

}  // namespace colltest::client
