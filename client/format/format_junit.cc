// JUnit XML for CI systems: one <testcase> per case (or per rank and pair of a health check),
// <failure> for WRONG and HANG, <error> for ERROR and for a HANG the infrastructure caused, and
// <skipped> for UNSUPPORTED, so a CI dashboard shows exactly which shape and variant, or which GPU
// or link, broke, and tells a broken collective from a broken node (docs/output-formats.md).
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "client/format/format.h"
#include "client/format/format_groups.h"
#include "client/format/junit_xml.h"
#include "client/format/quant_view.h"
#include "client/format/result_view.h"
#include "common/names.h"

namespace colltest::client {
namespace {

bool IsFailure(v1::CaseStatus status) {
  return status != v1::CASE_STATUS_OK && status != v1::CASE_STATUS_UNSUPPORTED;
}

// Words with which the server describes a hang that the infrastructure caused rather than the
// collective: a worker that died or could not start, a call that failed in the infrastructure.
bool SaysInfrastructure(absl::string_view text) {
  for (absl::string_view mark :
       {"died", "could not start", "failed to start", "(infrastructure)"}) {
    if (absl::StrContains(text, mark)) return true;
  }
  return false;
}

// ERROR (or a status the server left unset) is an <error>; a HANG is one too when any rank ended
// in ERROR or its message or phase says a worker died or could not start. WRONG and any other HANG
// is a <failure>: the collective itself went wrong.
Outcome CaseOutcome(const v1::CaseResult& c) {
  if (c.status() != v1::CASE_STATUS_WRONG && c.status() != v1::CASE_STATUS_HANG) {
    return Outcome::kError;
  }
  if (c.status() == v1::CASE_STATUS_WRONG) return Outcome::kFailure;
  if (SaysInfrastructure(c.message())) return Outcome::kError;
  for (const v1::RankResult& r : c.ranks()) {
    if (r.status() == v1::CASE_STATUS_ERROR) return Outcome::kError;
    if (SaysInfrastructure(r.message()) || SaysInfrastructure(r.phase())) return Outcome::kError;
  }
  return Outcome::kFailure;
}

Outcome TargetOutcome(const v1::HealthTarget& t) {
  if (t.status() == v1::CASE_STATUS_WRONG) return Outcome::kFailure;
  if (t.status() != v1::CASE_STATUS_HANG) return Outcome::kError;
  return SaysInfrastructure(t.message()) || SaysInfrastructure(t.phase()) ? Outcome::kError
                                                                          : Outcome::kFailure;
}

void Count(Outcome outcome, SuiteCounts& counts) {
  ++(outcome == Outcome::kError ? counts.errors : counts.failures);
}

// The failure body carries what a CI reader needs to start debugging without rerunning: the first
// bad element and which rank waited for whom.
std::string FailureDetails(const v1::CaseResult& c) {
  std::string details = c.message();
  // The worker's first_bad already names its call ("... (call 1)"); only an older one's lacks it.
  if (const std::string& first_bad = c.diff().first_bad(); !first_bad.empty()) {
    absl::StrAppend(&details, "\nfirst bad: ", first_bad);
    if (!absl::StrContains(first_bad, "(call ")) {
      absl::StrAppend(&details, " (call ", c.diff().first_bad_call(), ")");
    }
  }
  // The quantised output's own verdict: its codes are no part of the diff above.
  if (const v1::QuantDiffStats& q = c.quant();
      q.code_mismatches() > 0 || q.scale_mismatches() > 0) {
    absl::StrAppend(&details, "\nquant: ", QuantCell(q));
    if (!q.first_bad().empty()) absl::StrAppend(&details, "; first bad: ", q.first_bad());
  }
  for (const v1::RankResult& r : c.ranks()) {
    if (!IsFailure(r.status())) continue;
    absl::StrAppend(&details, "\nrank ", r.rank(), " (device ", r.device(),
                    "): ", common::CaseStatusName(r.status()));
    if (r.suspect_peer() >= 0) absl::StrAppend(&details, " waited for rank ", r.suspect_peer());
    if (!r.phase().empty()) absl::StrAppend(&details, " in ", r.phase());
    if (!r.message().empty()) absl::StrAppend(&details, ": ", r.message());
  }
  return details;
}

// "eager w=2 m=64 n=7168 bf16", then the epilogue when it quantised ("... bf16 fp8_token"), so
// that the cases of one shape with different epilogues are different tests.
std::string TestCaseName(const v1::CaseResult& c) {
  std::string name = absl::StrFormat("%s w=%d m=%d n=%d %s", common::ModeName(c.mode()),
                                     c.world_size(), c.m(), c.n(), common::DTypeName(c.dtype()));
  if (QuantisingEpilogue(c)) absl::StrAppend(&name, " ", EpilogueLabel(c));
  return name;
}

std::string TestCaseXml(const v1::CaseResult& c) {
  std::string out =
      absl::StrFormat("  <testcase classname=\"colltest.%s\" name=\"%s\" time=\"%.3f\"",
                      XmlAttr(VariantLabel(c)), XmlAttr(TestCaseName(c)), c.wall_ms() / 1000.0);
  if (c.status() == v1::CASE_STATUS_UNSUPPORTED) {
    absl::StrAppend(&out, ">\n    <skipped message=\"", XmlAttr(c.message()),
                    "\"/>\n  </testcase>\n");
  } else if (IsFailure(c.status())) {
    absl::StrAppend(&out, ">\n",
                    OutcomeXml(CaseOutcome(c), common::CaseStatusName(c.status()), c.message(),
                               FailureDetails(c)),
                    "  </testcase>\n");
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
                  ": ", common::CaseStatusName(t.status()));
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
    body = OutcomeXml(TargetOutcome(t), common::CaseStatusName(t.status()), t.message(),
                      TargetFailureDetails(t));
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
// otherwise be a green suite; the verdict becomes a testcase of its own, an <error> for an ERROR.
// Not for a BUSY answer without an earlier verdict, whose status is unset: its busy testcase says
// what happened.
std::string VerdictCaseXml(const v1::HealthResponse& health, SuiteCounts& counts) {
  if (!IsFailure(health.status()) || counts.failures + counts.errors > 0 || health.busy()) {
    return "";
  }
  const Outcome outcome =
      health.status() == v1::CASE_STATUS_WRONG || health.status() == v1::CASE_STATUS_HANG
          ? Outcome::kFailure
          : Outcome::kError;
  ++counts.tests;
  Count(outcome, counts);
  return absl::StrCat("  <testcase classname=\"colltest.health\" name=\"verdict\">\n",
                      OutcomeXml(outcome, common::CaseStatusName(health.status()), health.message(),
                                 health.message()),
                      "  </testcase>\n");
}

Properties HealthProperties(const v1::HealthResponse& health) {
  Properties properties = {{"status", std::string(common::CaseStatusName(health.status()))},
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
  SuiteCounts counts;
  counts.tests = run.cases_size();
  std::string cases;
  for (const v1::CaseResult& c : run.cases()) {
    counts.seconds += c.wall_ms() / 1000.0;
    if (c.status() == v1::CASE_STATUS_UNSUPPORTED) ++counts.skipped;
    if (IsFailure(c.status())) Count(CaseOutcome(c), counts);
    absl::StrAppend(&cases, TestCaseXml(c));
  }
  // A cancelled, failed or interrupted run did not finish its cases and may have none at all;
  // without a testcase of its own it would show as a green, empty suite in CI. It is an <error>:
  // what stopped it was not a collective's result.
  if (RunAborted(run.state())) {
    ++counts.tests;
    ++counts.errors;
    absl::StrAppend(&cases, "  <testcase classname=\"colltest\" name=\"run\" time=\"0\">\n",
                    OutcomeXml(Outcome::kError, common::RunStateName(run.state()), run.message(),
                               run.message()),
                    "  </testcase>\n");
  }
  Properties properties = {{"run_id", run.run_id()},
                           {"backend", run.backend()},
                           {"state", std::string(common::RunStateName(run.state()))},
                           {"label", run.spec().label()},
                           // Shared: the suite's timings are kernel overhead, not a link's.
                           {"ranks_per_gpu", absl::StrCat(RanksPerGpu(run))},
                           {"shared_gpu", SharedGpu(run) ? "true" : "false"},
                           {"time_sliced", run.time_sliced() ? "true" : "false"}};
  if (SharedGpu(run)) properties.emplace_back("timing_note", SharedGpuNote(run));
  for (auto& property : MachineProperties(run.machine())) properties.push_back(std::move(property));
  return SuiteXml("colltest", counts, MachineOrigin(run.machine(), run.created_unix_ms()),
                  properties, cases);
}

std::string FormatFailureJunit(const absl::Status& status, absl::string_view command,
                               absl::string_view server) {
  const std::string code = absl::StatusCodeToString(status.code());
  const std::string message = absl::StrCat(code, ": ", status.message());
  const std::string testcases =
      absl::StrCat("  <testcase classname=\"colltest.", XmlAttr(command), "\" name=\"",
                   XmlAttr(command), " on ", XmlAttr(server), "\" time=\"0\">\n",
                   OutcomeXml(Outcome::kError, code, message, message), "  </testcase>\n");
  SuiteCounts counts;
  counts.tests = 1;
  counts.errors = 1;
  return absl::StrCat(kXmlDeclaration, SuiteXml(command, counts, SuiteOrigin{},
                                                {{"server", std::string(server)}}, testcases));
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
      if (IsFailure(t.status())) Count(TargetOutcome(t), counts);
      if (t.status() == v1::CASE_STATUS_UNSUPPORTED) ++counts.skipped;
      absl::StrAppend(&cases, TargetTestCaseXml(kind, t, health.machine()));
    }
  }
  absl::StrAppend(&cases, SelfTestCaseXml(health.self_test(), counts));
  absl::StrAppend(&cases, VerdictCaseXml(health, counts));
  absl::StrAppend(&cases, BusyCaseXml(health, counts));
  return absl::StrCat(
      kXmlDeclaration,
      SuiteXml("colltest.health", counts, MachineOrigin(health.machine(), health.verdict_unix_ms()),
               HealthProperties(health), cases));
}

}  // namespace colltest::client
