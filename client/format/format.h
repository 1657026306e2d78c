// Renderers of command results. Each returns the whole text, so the caller decides whether it goes
// to stdout or to --out, and tests can compare strings.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

enum class OutputFormat { kTable, kJson, kCsv, kJunit };

// Parses the --format value ("table", "json", "csv", "junit").
absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view text);
absl::string_view OutputFormatName(OutputFormat format);

// How wide a table may be: kFit keeps it within 120 columns (long messages are cut, rare columns
// left out), kWide (--wide) prints every column in full.
enum class TableWidth { kFit, kWide };

// A run, in any of the four formats.
std::string FormatRun(const v1::RunResult& run, OutputFormat format,
                      TableWidth width = TableWidth::kFit);

std::string FormatRunTable(const v1::RunResult& run, TableWidth width = TableWidth::kFit);
// docs/design.md section 10: one object with run_id, backend, state and a `cases` array.
std::string FormatRunJson(const v1::RunResult& run);
std::string FormatRunCsv(const v1::RunResult& run);
std::string FormatRunJunit(const v1::RunResult& run);

// The report of a command that could not get an answer from the server (unreachable, refused,
// timed out): a JUnit document with one testsuite named after `command` holding one testcase
// "<command> on <server>" with an <error> carrying the status, so that CI shows why when --out
// was given. Also has the timestamp and hostname of every other JUnit report.
std::string FormatFailureJunit(const absl::Status& status, absl::string_view command,
                               absl::string_view server);

// A health check, in any of the four formats. Every format names each rank and pair with its
// status, and the WARN of a slow one, which is not a failure.
std::string FormatHealth(const v1::HealthResponse& health, OutputFormat format);

// The verdict line (for a BUSY answer, "BUSY: reason" and then the earlier verdict, if any), the
// level, whether the verdict is cached and how old, the self test, the machine, then a table of
// ranks and one of pairs (with bus bandwidth against the expected figure at level long).
std::string FormatHealthTable(const v1::HealthResponse& health);
// One object with status, message, wall_ms, level, verdict_unix_ms, verdict_age_ms (null unless
// cached or busy), cached, busy, busy_reason, self_test, ranks, pairs (each with its devices'
// UUIDs), groups, a `cases` array whose items have the shape of FormatRunJson's, run_ids and
// machine.
std::string FormatHealthJson(const v1::HealthResponse& health);
// The two above with the age of a cached or BUSY verdict told at `now` rather than absl::Now().
std::string FormatHealthTableAt(const v1::HealthResponse& health, absl::Time now);
std::string FormatHealthJsonAt(const v1::HealthResponse& health, absl::Time now);
// One row per rank and per pair.
std::string FormatHealthCsv(const v1::HealthResponse& health);
// One testcase per rank and per pair (naming its devices' UUIDs), one for the self test when it
// ran or said why not, an error testcase "busy" for a BUSY answer; the machine in the properties.
std::string FormatHealthJunit(const v1::HealthResponse& health);

// "quick", "standard" or "long", as `health --level` takes them; UNSPECIFIED is quick, as on the
// server.
absl::string_view HealthLevelName(v1::HealthLevel level);

// How old a health verdict is at `now` (zero when the client's clock is behind the server's).
absl::Duration HealthVerdictAge(const v1::HealthResponse& health, absl::Time now);

// The comparison of two runs (`compare`), in any of the four formats. Every format names each
// case's verdict (REGRESSION, IMPROVEMENT, SAME, ONLY_A, ONLY_B) and its reason.
std::string FormatCompare(const v1::CompareResponse& comparison, OutputFormat format);

// Which runs, on which machines (when their drivers or builds differ, both), one row per case with
// both medians and the change, then the one-line verdict.
std::string FormatCompareTable(const v1::CompareResponse& comparison);
// One object: run_a, run_b, baseline, threshold, regressed, regressions, improvements, message,
// machine_a, machine_b and `cases`, each with variant, mode, world, m, n, dtype, verdict, reason,
// status_a/b, median_a/b_us, p10 and p90 of both, ratio and the error counts of both. The fields
// of a side the case is missing from (ONLY_A, ONLY_B) are null.
std::string FormatCompareJson(const v1::CompareResponse& comparison);
// One row per case.
std::string FormatCompareCsv(const v1::CompareResponse& comparison);
// <testsuite name="comparison">, one testcase per case, a <failure> for REGRESSION and ONLY_A.
std::string FormatCompareJunit(const v1::CompareResponse& comparison);

// A run followed by its comparison with a baseline (`run` / `sweep --compare-baseline`). Table:
// the run's, then the comparison's. JSON: the run's object with a "comparison" object next to
// "cases". JUnit: <testsuites> holding the run's suite and the comparison's. CSV has one table per
// file, so the command refuses it; here it is the run's alone.
std::string FormatRunWithComparison(const v1::RunResult& run, const v1::CompareResponse& comparison,
                                    OutputFormat format, TableWidth width = TableWidth::kFit);
std::string FormatRunWithComparisonJson(const v1::RunResult& run,
                                        const v1::CompareResponse& comparison);
std::string FormatRunWithComparisonJunit(const v1::RunResult& run,
                                         const v1::CompareResponse& comparison);

// `devices` listing: table or JSON only (a CSV or JUnit view of it has no user).
absl::StatusOr<std::string> FormatDevices(const v1::ListDevicesResponse& devices,
                                          OutputFormat format);

// `history` (and `runs`): table, JSON ({"runs": [...], "next_page_token": ...}) or CSV. A table
// ends with the --page-token to continue with when there are more runs.
absl::StatusOr<std::string> FormatRuns(const v1::ListRunsResponse& runs, OutputFormat format);

// `baseline set`: "baseline NAME of HOST (key K) = RUN_ID", or the Baseline as JSON.
absl::StatusOr<std::string> FormatBaseline(const v1::Baseline& baseline, OutputFormat format);
// `baseline list`: table or JSON ({"baselines": [...]}).
absl::StatusOr<std::string> FormatBaselines(const v1::ListBaselinesResponse& baselines,
                                            OutputFormat format);

}  // namespace colltest::client
