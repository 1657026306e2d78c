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
#include "client/format_groups.h"
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

// A target's <system-out>: its devices' identities (an index is only the server's numbering, the
// UUID names the board to pull), then any WARN, which a reader of a green suite should still see.
std::string TargetSystemOut(const v1::HealthTarget& t, const v1::MachineIdentity& machine) {
  std::vector<std::string> lines;
  for (uint32_t index : t.devices()) {
    const v1::Device* d = FindDevice(machine, index);
    if (d == nullptr) continue;
    std::string line = absl::StrCat("device ", index, ": uuid ", d->uuid());
    if (!d->pci_bus_id().empty()) absl::StrAppend(&line, ", pci bus id ", d->pci_bus_id());
    if (!d->serial().empty()) absl::StrAppend(&line, ", serial ", d->serial());
    lines.push_back(std::move(line));
  }
  if (t.slow()) {
    lines.push_back(
        absl::StrFormat("WARN: %.1f us, %.2f x the median", t.latency_us(), t.median_ratio()));
  }
  if (t.below_expected()) {
    lines.push_back(absl::StrFormat("WARN: bus bandwidth %.1f GB/s, expected %.1f GB/s",
                                    t.busbw_gbps(), t.expected_busbw_gbps()));
  }
  return absl::StrJoin(lines, "\n");
}

// `kind` is "rank" or "pair": CI groups the testcases by it.
std::string TargetTestCaseXml(absl::string_view kind, const v1::HealthTarget& t,
                              const v1::MachineIdentity& machine) {
  std::string out =
      absl::StrCat("  <testcase classname=\"colltest.health.", kind, "\" name=\"",
                   t.devices_size() == 1 ? "device " : "devices ", XmlAttr(TargetDevices(t)), "\"");
  std::string body;
  if (t.status() == v1::CASE_STATUS_UNSUPPORTED) {
    body = absl::StrCat("    <skipped message=\"", XmlAttr(t.message()), "\"/>\n");
  } else if (IsFailure(t.status())) {
    body =
        absl::StrCat("    <failure type=\"", CaseStatusName(t.status()), "\" message=\"",
                     XmlAttr(t.message()), "\">", XmlText(TargetFailureDetails(t)), "</failure>\n");
  }
  if (const std::string system_out = TargetSystemOut(t, machine); !system_out.empty()) {
    absl::StrAppend(&body, "    <system-out>", XmlText(system_out), "</system-out>\n");
  }
  if (body.empty()) return absl::StrCat(out, "/>\n");
  return absl::StrCat(out, ">\n", body, "  </testcase>\n");
}

// The planted-fault test of level standard: a failure when the fault did not come back as planted,
// skipped when it could not run (the server does not allow fault injection), no testcase at a
// level that has none.
std::string SelfTestCaseXml(const v1::HealthSelfTest& self_test, SuiteCounts& counts) {
  if (!self_test.ran() && self_test.message().empty()) return "";
  ++counts.tests;
  std::string out =
      absl::StrCat("  <testcase classname=\"colltest.health\" name=\"self test",
                   self_test.fault().empty() ? "" : " ", XmlAttr(self_test.fault()), "\">\n");
  if (!self_test.ran()) {
    ++counts.skipped;
    absl::StrAppend(&out, "    <skipped message=\"", XmlAttr(self_test.message()), "\"/>\n");
  } else if (!self_test.passed()) {
    ++counts.failures;
    absl::StrAppend(&out, "    <failure type=\"SELF_TEST\" message=\"",
                    XmlAttr(self_test.message()), "\">", XmlText(self_test.message()),
                    "</failure>\n");
  } else {
    absl::StrAppend(&out, "    <system-out>", XmlText(self_test.message()), "</system-out>\n");
  }
  return absl::StrCat(out, "  </testcase>\n");
}

// A BUSY answer checked nothing: an error testcase, so the suite cannot read as a fresh pass built
// from the earlier verdict the other testcases hold.
std::string BusyCaseXml(const v1::HealthResponse& health, SuiteCounts& counts) {
  if (!health.busy()) return "";
  ++counts.tests;
  ++counts.errors;
  return absl::StrCat("  <testcase classname=\"colltest.health\" name=\"busy\">\n",
                      "    <error type=\"BUSY\" message=\"", XmlAttr(health.busy_reason()), "\">",
                      XmlText(health.busy_reason()), "</error>\n  </testcase>\n");
}

// A check that failed before it could judge any target (no group, every case an ERROR) would
// otherwise be a green suite; the verdict becomes a testcase of its own. Not for a BUSY answer
// without an earlier verdict, whose status is unset: its busy testcase says what happened.
std::string VerdictCaseXml(const v1::HealthResponse& health, SuiteCounts& counts) {
  if (!IsFailure(health.status()) || counts.failures > 0 || health.busy()) return "";
  ++counts.tests;
  ++counts.failures;
  return absl::StrCat("  <testcase classname=\"colltest.health\" name=\"verdict\">\n",
                      "    <failure type=\"", CaseStatusName(health.status()), "\" message=\"",
                      XmlAttr(health.message()), "\">", XmlText(health.message()),
                      "</failure>\n  </testcase>\n");
}

Properties HealthProperties(const v1::HealthResponse& health) {
  Properties properties = {{"status", std::string(CaseStatusName(health.status()))},
                           {"message", health.message()},
                           {"run_ids", absl::StrJoin(health.run_ids(), ",")},
                           {"level", std::string(HealthLevelName(health.level()))},
                           {"cached", health.cached() ? "true" : "false"},
                           {"busy", health.busy() ? "true" : "false"},
                           {"verdict_unix_ms", absl::StrCat(health.verdict_unix_ms())}};
  if (health.busy()) properties.emplace_back("busy_reason", health.busy_reason());
  for (auto& property : MachineProperties(health.machine())) {
    properties.push_back(std::move(property));
  }
  return properties;
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
  Properties properties = {{"run_id", run.run_id()},
                           {"backend", run.backend()},
                           {"state", std::string(RunStateName(run.state()))},
                           {"label", run.spec().label()}};
  for (auto& property : MachineProperties(run.machine())) properties.push_back(std::move(property));
  return SuiteXml("colltest", {tests, failures, counts.unsupported, seconds}, properties, cases);
}

std::string FormatFailureJunit(const absl::Status& status, absl::string_view command,
                               absl::string_view server) {
  (void)status;
  (void)command;
  (void)server;
  return "";  // TODO(junit): one failing testcase
}

std::string FormatRunJunit(const v1::RunResult& run) {
  return absl::StrCat(kXmlDeclaration, RunSuiteXml(run));
}

std::string FormatHealthJunit(const v1::HealthResponse& health) {
  SuiteCounts counts;
  counts.seconds = health.wall_ms() / 1000.0;
  std::string cases;
  for (const auto& [kind, targets] :
       {std::pair{"rank", &health.ranks()}, std::pair{"pair", &health.pairs()}}) {
    for (const v1::HealthTarget& t : *targets) {
      ++counts.tests;
      if (IsFailure(t.status())) ++counts.failures;
      if (t.status() == v1::CASE_STATUS_UNSUPPORTED) ++counts.skipped;
      absl::StrAppend(&cases, TargetTestCaseXml(kind, t, health.machine()));
    }
  }
  absl::StrAppend(&cases, SelfTestCaseXml(health.self_test(), counts));
  absl::StrAppend(&cases, VerdictCaseXml(health, counts));
  absl::StrAppend(&cases, BusyCaseXml(health, counts));
  return absl::StrCat(kXmlDeclaration,
                      SuiteXml("colltest.health", counts, HealthProperties(health), cases));
}

}  // namespace colltest::client
