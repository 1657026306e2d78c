// JUnit XML for CI systems: one <testcase> per case (or per rank and pair of a health check),
// <failure> for WRONG / HANG / ERROR and <skipped> for UNSUPPORTED, so a CI dashboard shows exactly
// which shape and variant, or which GPU or link, broke.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "client/format.h"
#include "client/junit_xml.h"
#include "client/names.h"
#include "client/result_view.h"

namespace colltest::client {
namespace {

bool IsFailure(v1::CaseStatus status) {
  return status != v1::CASE_STATUS_OK && status != v1::CASE_STATUS_UNSUPPORTED;
}

// The failure body carries what a CI reader needs to start debugging without rerunning: the first
// bad element and which rank waited for whom.
std::string FailureDetails(const v1::CaseResult& c) {
  std::string details = c.message();
  if (!c.diff().first_bad().empty()) {
    absl::StrAppend(&details, "\nfirst bad: ", c.diff().first_bad(), " (call ",
                    c.diff().first_bad_call(), ")");
  }
  for (const v1::RankResult& r : c.ranks()) {
    if (!IsFailure(r.status())) continue;
    absl::StrAppend(&details, "\nrank ", r.rank(), " (device ", r.device(),
                    "): ", CaseStatusName(r.status()));
    if (r.suspect_peer() >= 0) absl::StrAppend(&details, " waited for rank ", r.suspect_peer());
    if (!r.phase().empty()) absl::StrAppend(&details, " in ", r.phase());
    if (!r.message().empty()) absl::StrAppend(&details, ": ", r.message());
  }
  return details;
}

std::string TestCaseXml(const v1::CaseResult& c) {
  std::string out = absl::StrFormat(
      "  <testcase classname=\"colltest.%s\" name=\"%s w=%d m=%d n=%d %s\" time=\"%.3f\"",
      XmlAttr(VariantLabel(c)), ModeName(c.mode()), c.world_size(), c.m(), c.n(),
      DTypeName(c.dtype()), c.wall_ms() / 1000.0);
  if (c.status() == v1::CASE_STATUS_UNSUPPORTED) {
    absl::StrAppend(&out, ">\n    <skipped message=\"", XmlAttr(c.message()),
                    "\"/>\n  </testcase>\n");
  } else if (IsFailure(c.status())) {
    absl::StrAppend(&out, ">\n    <failure type=\"", CaseStatusName(c.status()), "\" message=\"",
                    XmlAttr(c.message()), "\">", XmlText(FailureDetails(c)),
                    "</failure>\n  </testcase>\n");
  } else {
    absl::StrAppend(&out, "/>\n");
  }
  return out;
}

// Like FailureDetails: who waited for whom, in device numbers since a health target has no ranks.
std::string TargetFailureDetails(const v1::HealthTarget& t) {
  std::string details = t.message();
  const int32_t suspect = SuspectDevice(t);
  if (suspect < 0 && t.phase().empty()) return details;
  absl::StrAppend(&details, "\n", t.devices_size() == 1 ? "device " : "devices ", TargetDevices(t),
                  ": ", CaseStatusName(t.status()));
  if (suspect >= 0) absl::StrAppend(&details, " waited for device ", suspect);
  if (!t.phase().empty()) absl::StrAppend(&details, " in ", t.phase());
  return details;
}

// `kind` is "rank" or "pair": CI groups the testcases by it.
std::string TargetTestCaseXml(absl::string_view kind, const v1::HealthTarget& t) {
  std::string out =
      absl::StrCat("  <testcase classname=\"colltest.health.", kind, "\" name=\"",
                   t.devices_size() == 1 ? "device " : "devices ", XmlAttr(TargetDevices(t)), "\"");
  if (t.status() == v1::CASE_STATUS_UNSUPPORTED) {
    absl::StrAppend(&out, ">\n    <skipped message=\"", XmlAttr(t.message()),
                    "\"/>\n  </testcase>\n");
  } else if (IsFailure(t.status())) {
    absl::StrAppend(&out, ">\n    <failure type=\"", CaseStatusName(t.status()), "\" message=\"",
                    XmlAttr(t.message()), "\">", XmlText(TargetFailureDetails(t)),
                    "</failure>\n  </testcase>\n");
  } else if (t.slow()) {
    // A slow target passes, but a CI reader looking at a green suite should still see the WARN.
    absl::StrAppend(&out, absl::StrFormat(">\n    <system-out>WARN: %.1f us, %.2f x the median"
                                          "</system-out>\n  </testcase>\n",
                                          t.latency_us(), t.median_ratio()));
  } else {
    absl::StrAppend(&out, "/>\n");
  }
  return out;
}

}  // namespace

std::string RunSuiteXml(const v1::RunResult& run) {
  const StatusCounts counts = CountStatuses(run);
  int tests = run.cases_size();
  int failures = counts.wrong + counts.hang + counts.error + counts.unspecified;
  double seconds = 0;
  for (const v1::CaseResult& c : run.cases()) seconds += c.wall_ms() / 1000.0;

  // A cancelled or failed run may have no cases at all; without a testcase of its own it would show
  // as a green, empty suite in CI.
  std::string run_case;
  if (RunAborted(run.state())) {
    ++tests;
    ++failures;
    run_case = absl::StrCat("  <testcase classname=\"colltest\" name=\"run\" time=\"0\">\n",
                            "    <failure type=\"", RunStateName(run.state()), "\" message=\"",
                            XmlAttr(run.message()), "\">", XmlText(run.message()),
                            "</failure>\n  </testcase>\n");
  }

  std::string cases;
  for (const v1::CaseResult& c : run.cases()) absl::StrAppend(&cases, TestCaseXml(c));
  absl::StrAppend(&cases, run_case);
  return SuiteXml("colltest", {tests, failures, counts.unsupported, seconds},
                  {{"run_id", run.run_id()},
                   {"backend", run.backend()},
                   {"state", std::string(RunStateName(run.state()))},
                   {"label", run.spec().label()}},
                  cases);
}

std::string FormatRunJunit(const v1::RunResult& run) {
  return absl::StrCat(kXmlDeclaration, RunSuiteXml(run));
}

std::string FormatHealthJunit(const v1::HealthResponse& health) {
  int tests = health.ranks_size() + health.pairs_size();
  int failures = 0;
  int skipped = 0;
  std::string cases;
  for (const auto& [kind, targets] :
       {std::pair{"rank", &health.ranks()}, std::pair{"pair", &health.pairs()}}) {
    for (const v1::HealthTarget& t : *targets) {
      if (IsFailure(t.status())) ++failures;
      if (t.status() == v1::CASE_STATUS_UNSUPPORTED) ++skipped;
      absl::StrAppend(&cases, TargetTestCaseXml(kind, t));
    }
  }
  // A check that failed before it could judge any target (no group, every case an ERROR) would
  // otherwise be a green suite; the verdict becomes a testcase of its own.
  if (IsFailure(health.status()) && failures == 0) {
    ++tests;
    ++failures;
    absl::StrAppend(&cases, "  <testcase classname=\"colltest.health\" name=\"verdict\">\n",
                    "    <failure type=\"", CaseStatusName(health.status()), "\" message=\"",
                    XmlAttr(health.message()), "\">", XmlText(health.message()),
                    "</failure>\n  </testcase>\n");
  }

  return absl::StrCat(
      kXmlDeclaration,
      SuiteXml("colltest.health", {tests, failures, skipped, health.wall_ms() / 1000.0},
               {{"status", std::string(CaseStatusName(health.status()))},
                {"message", health.message()},
                {"run_ids", absl::StrJoin(health.run_ids(), ",")}},
               cases));
}

}  // namespace colltest::client
