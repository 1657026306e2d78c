#include "server/runs/query_validation.h"

#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/text.h"
#include "server/runs/validation.h"
#include "store/run_store.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(message); }

absl::Status CheckLength(absl::string_view field, absl::string_view value, size_t limit) {
  if (value.size() <= limit) return absl::OkStatus();
  return Invalid(absl::StrCat(field, ": ", value.size(), " bytes, the limit is ", limit));
}

// Letters, digits, '.', '_' and '-': page tokens, machine keys and baseline names.
bool IsNameText(absl::string_view value) {
  for (char c : value) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

// Page tokens and machine keys are ours: short names.
absl::Status CheckToken(absl::string_view field, absl::string_view value, size_t limit) {
  COLLTEST_RETURN_IF_ERROR(CheckLength(field, value, limit));
  if (IsNameText(value)) return absl::OkStatus();
  return Invalid(absl::StrCat(field, ": \"", common::EscapeForTerminal(value),
                              "\" is not one colltestd issued"));
}

}  // namespace

absl::Status ValidateListRuns(const v1::ListRunsRequest& request) {
  if (request.limit() > store::kMaxListLimit) {
    return Invalid(
        absl::StrCat("limit: ", request.limit(), ", the limit is ", store::kMaxListLimit));
  }
  COLLTEST_RETURN_IF_ERROR(common::CheckLabel("label", request.label()));
  if (!v1::RunState_IsValid(request.state())) {
    return Invalid(absl::StrCat("state: ", request.state(), " is not a RunState"));
  }
  if (!v1::Variant_IsValid(request.variant())) {
    return Invalid(absl::StrCat("variant: ", request.variant(), " is not a Variant"));
  }
  if (request.since_unix_ms() < 0) {
    return Invalid(absl::StrCat("since_unix_ms: ", request.since_unix_ms(), " is negative"));
  }
  COLLTEST_RETURN_IF_ERROR(CheckToken("machine_key", request.machine_key(), kMaxMachineKeyBytes));
  return CheckToken("page_token", request.page_token(), kMaxPageTokenBytes);
}

absl::StatusOr<std::string> NormalizeBaselineName(absl::string_view field, absl::string_view name) {
  if (name.empty()) return std::string(kDefaultBaselineName);
  COLLTEST_RETURN_IF_ERROR(CheckLength(field, name, kMaxBaselineNameBytes));
  if (IsNameText(name)) return std::string(name);
  return Invalid(absl::StrCat(field, ": \"", common::EscapeForTerminal(name),
                              "\": a baseline name is letters, digits, '.', '_' and '-'"));
}

absl::Status ValidateListBaselines(const v1::ListBaselinesRequest& request) {
  return CheckToken("machine_key", request.machine_key(), kMaxMachineKeyBytes);
}

absl::StatusOr<v1::CompareRequest> NormalizeCompare(const v1::CompareRequest& request) {
  v1::CompareRequest out = request;
  COLLTEST_RETURN_IF_ERROR(ValidateRunId(request.run_b(), "run_b"));
  if (!request.run_a().empty()) {
    COLLTEST_RETURN_IF_ERROR(ValidateRunId(request.run_a(), "run_a"));
    if (!request.baseline().empty()) {
      return Invalid("baseline: give run_a or baseline, not both");
    }
  } else {
    COLLTEST_ASSIGN_OR_RETURN(std::string name,
                              NormalizeBaselineName("baseline", request.baseline()));
    out.set_baseline(name);
  }
  const double t = request.threshold();
  if (!std::isfinite(t) || t < 0 || t > kMaxCompareThreshold) {
    return Invalid(absl::StrCat("threshold: ", t, ", expected 0 (the default, ",
                                kDefaultCompareThreshold, ") to ", kMaxCompareThreshold));
  }
  if (t == 0) out.set_threshold(kDefaultCompareThreshold);
  return out;
}

}  // namespace colltest::server
