#include "client/flags/compare_flags.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace colltest::client {

absl::StatusOr<double> ParseThresholdFlag(absl::string_view flag, absl::string_view text) {
  absl::string_view number = absl::StripAsciiWhitespace(text);
  const bool percent = absl::ConsumeSuffix(&number, "%");
  double value = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(number), &value) || !std::isfinite(value) ||
      value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": cannot parse '", text,
                     "': expected a fraction such as 0.05 or a percentage such "
                     "as 5%"));
  }
  if (percent) return value / 100;
  if (value >= 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": '", absl::StripAsciiWhitespace(text), "' would be ", value * 100,
                     " %: write ", value / 100, " or ", value, "% for ", value, " %"));
  }
  return value;
}

absl::StatusOr<v1::CompareRequest> BuildCompareRequest(const CompareFlags& flags) {
  v1::CompareRequest request;
  const size_t wanted = flags.baseline.has_value() ? 1 : 2;
  if (flags.runs.size() != wanted) {
    return absl::InvalidArgumentError(
        flags.baseline.has_value()
            ? "compare: with --baseline, name one run (the candidate): compare RUN --baseline NAME"
            : "compare: name two runs, the reference then the candidate: compare RUN_A RUN_B "
              "(or RUN --baseline NAME)");
  }
  if (flags.baseline.has_value()) {
    request.set_baseline(*flags.baseline);
  } else {
    request.set_run_a(flags.runs[0]);
  }
  request.set_run_b(flags.runs.back());
  if (flags.threshold.has_value()) {
    COLLTEST_ASSIGN_OR_RETURN(const double threshold,
                              ParseThresholdFlag("--threshold", *flags.threshold));
    request.set_threshold(threshold);
  }
  return request;
}

absl::StatusOr<std::optional<v1::CompareRequest>> BuildRunComparison(const CompareFlags& flags) {
  if (!flags.baseline.has_value()) {
    if (flags.threshold.has_value()) {
      return absl::InvalidArgumentError(
          "--compare-threshold: only with --compare-baseline, which it applies to");
    }
    return std::nullopt;
  }
  v1::CompareRequest request;
  request.set_baseline(*flags.baseline);
  if (flags.threshold.has_value()) {
    COLLTEST_ASSIGN_OR_RETURN(const double threshold,
                              ParseThresholdFlag("--compare-threshold", *flags.threshold));
    request.set_threshold(threshold);
  }
  return request;
}

}  // namespace colltest::client
