// Renderers of command results. Each returns the whole text, so the caller decides whether it goes
// to stdout or to --out, and tests can compare strings.
#ifndef COLLTEST_CLIENT_FORMAT_H_
#define COLLTEST_CLIENT_FORMAT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

enum class OutputFormat { kTable, kJson, kCsv, kJunit };

// Parses the --format value ("table", "json", "csv", "junit").
absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view text);
absl::string_view OutputFormatName(OutputFormat format);

// A run, in any of the four formats.
std::string FormatRun(const v1::RunResult& run, OutputFormat format);

std::string FormatRunTable(const v1::RunResult& run);
// DESIGN section 10: one object with run_id, backend, state and a `cases` array.
std::string FormatRunJson(const v1::RunResult& run);
std::string FormatRunCsv(const v1::RunResult& run);
std::string FormatRunJunit(const v1::RunResult& run);

// A health check, in any of the four formats. Every format names each rank and pair with its
// status, and the WARN of a slow one, which is not a failure.
std::string FormatHealth(const v1::HealthResponse& health, OutputFormat format);

std::string FormatHealthTable(const v1::HealthResponse& health);
// One object with status, message, wall_ms, ranks, pairs, groups, run_ids and a `cases` array whose
// items have the shape of FormatRunJson's.
std::string FormatHealthJson(const v1::HealthResponse& health);
// One row per rank and per pair.
std::string FormatHealthCsv(const v1::HealthResponse& health);
// One testcase per rank and per pair.
std::string FormatHealthJunit(const v1::HealthResponse& health);

// `devices` and `runs` listings: table or JSON only (a CSV or JUnit view of them has no user).
absl::StatusOr<std::string> FormatDevices(const v1::ListDevicesResponse& devices,
                                          OutputFormat format);
absl::StatusOr<std::string> FormatRuns(const v1::ListRunsResponse& runs, OutputFormat format);

}  // namespace colltest::client

#endif  // COLLTEST_CLIENT_FORMAT_H_
