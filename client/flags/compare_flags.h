// The flags of `compare`, and --compare-baseline / --compare-threshold of `run` and `sweep`,
// turned into a CompareRequest. As in flags.h, only syntax is checked: whether the runs or the
// baseline exist is the server's answer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

struct CompareFlags {
  std::vector<std::string> runs;         // compare: RUN_A RUN_B, or RUN_B with --baseline
  std::optional<std::string> baseline;   // "" when given without a name: the default baseline
  std::optional<std::string> threshold;  // as typed
};

// `compare RUN_A RUN_B` or `compare RUN_B --baseline [NAME]`.
absl::StatusOr<v1::CompareRequest> BuildCompareRequest(const CompareFlags& flags);

// `run` / `sweep`: nullopt without --compare-baseline, which --compare-threshold needs. run_b is
// left empty for the id of the run about to be made.
absl::StatusOr<std::optional<v1::CompareRequest>> BuildRunComparison(const CompareFlags& flags);

// A tolerated slowdown of the median: a fraction ("0.05") or a percentage ("5%"), 0 meaning the
// server's default of 5 %. A bare number of 1 or more is refused, as "5" most likely means 5 %,
// which would otherwise be read as 500 %.
absl::StatusOr<double> ParseThresholdFlag(absl::string_view flag, absl::string_view text);

}  // namespace colltest::client
