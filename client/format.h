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

// `devices` and `runs` listings: table or JSON only (a CSV or JUnit view of them has no user).
absl::StatusOr<std::string> FormatDevices(const v1::ListDevicesResponse& devices,
                                          OutputFormat format);
absl::StatusOr<std::string> FormatRuns(const v1::ListRunsResponse& runs, OutputFormat format);

}  // namespace colltest::client

#endif  // COLLTEST_CLIENT_FORMAT_H_
