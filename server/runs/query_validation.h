// Checks of the history's requests (ListRuns, SetBaseline, ListBaselines, Compare), the one place
// for them whichever way a request came in (gRPC or the HTTP gateway). Every rejection is
// INVALID_ARGUMENT naming the field and the limit.
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "colltest/v1/colltest.pb.h"
#include "server/runs/compare.h"

namespace colltest::server {

inline constexpr size_t kMaxBaselineNameBytes = 64;
inline constexpr size_t kMaxPageTokenBytes = 64;
inline constexpr size_t kMaxMachineKeyBytes = 64;
inline constexpr double kMaxCompareThreshold = 10.0;  // 1000 %: beyond that nothing is a regression
inline constexpr const char* kDefaultBaselineName = "default";

absl::Status ValidateListRuns(const colltest::v1::ListRunsRequest& request);

// A baseline name: 1..64 bytes of [A-Za-z0-9._-]; "" means kDefaultBaselineName (returned).
absl::StatusOr<std::string> NormalizeBaselineName(absl::string_view field, absl::string_view name);

absl::Status ValidateListBaselines(const colltest::v1::ListBaselinesRequest& request);

// run_b is required; run_a, or else the baseline name; threshold 0 means the default.
// Returns the request with the defaults filled in.
absl::StatusOr<colltest::v1::CompareRequest> NormalizeCompare(
    const colltest::v1::CompareRequest& request);

}  // namespace colltest::server
