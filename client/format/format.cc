#include "client/format/format.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace colltest::client {

absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (lower == "table") return OutputFormat::kTable;
  if (lower == "json") return OutputFormat::kJson;
  if (lower == "csv") return OutputFormat::kCsv;
  if (lower == "junit") return OutputFormat::kJunit;
  return absl::InvalidArgumentError(
      absl::StrCat("--format: cannot parse '", text, "': expected table, json, csv or junit"));
}

absl::string_view OutputFormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kTable:
      return "table";
    case OutputFormat::kJson:
      return "json";
    case OutputFormat::kCsv:
      return "csv";
    case OutputFormat::kJunit:
      return "junit";
  }
  return "table";
}

std::string FormatRun(const v1::RunResult& run, OutputFormat format, TableWidth width) {
  switch (format) {
    case OutputFormat::kJson:
      return FormatRunJson(run);
    case OutputFormat::kCsv:
      return FormatRunCsv(run);
    case OutputFormat::kJunit:
      return FormatRunJunit(run);
    case OutputFormat::kTable:
      break;
  }
  return FormatRunTable(run, width);
}

std::string FormatHealth(const v1::HealthResponse& health, OutputFormat format) {
  switch (format) {
    case OutputFormat::kJson:
      return FormatHealthJson(health);
    case OutputFormat::kCsv:
      return FormatHealthCsv(health);
    case OutputFormat::kJunit:
      return FormatHealthJunit(health);
    case OutputFormat::kTable:
      break;
  }
  return FormatHealthTable(health);
}

absl::string_view HealthLevelName(v1::HealthLevel level) {
  switch (level) {
    case v1::HEALTH_LEVEL_STANDARD:
      return "standard";
    case v1::HEALTH_LEVEL_LONG:
      return "long";
    default:
      return "quick";
  }
}

absl::Duration HealthVerdictAge(const v1::HealthResponse& health, absl::Time now) {
  return std::max(absl::ZeroDuration(), now - absl::FromUnixMillis(health.verdict_unix_ms()));
}

std::string FormatCompare(const v1::CompareResponse& comparison, OutputFormat format) {
  switch (format) {
    case OutputFormat::kJson:
      return FormatCompareJson(comparison);
    case OutputFormat::kCsv:
      return FormatCompareCsv(comparison);
    case OutputFormat::kJunit:
      return FormatCompareJunit(comparison);
    case OutputFormat::kTable:
      break;
  }
  return FormatCompareTable(comparison);
}

std::string FormatRunWithComparison(const v1::RunResult& run, const v1::CompareResponse& comparison,
                                    OutputFormat format, TableWidth width) {
  switch (format) {
    case OutputFormat::kJson:
      return FormatRunWithComparisonJson(run, comparison);
    case OutputFormat::kCsv:
      return FormatRunCsv(run);
    case OutputFormat::kJunit:
      return FormatRunWithComparisonJunit(run, comparison);
    case OutputFormat::kTable:
      break;
  }
  return absl::StrCat(FormatRunTable(run, width), "\n", FormatCompareTable(comparison));
}

}  // namespace colltest::client
