#include "client/fleet/format_fleet.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/format/csv.h"
#include "client/format/format_json.h"
#include "client/format/junit_xml.h"
#include "client/format/text_table.h"

namespace colltest::client {
namespace {

constexpr absl::string_view kCsvHeader =
    "node,verdict,hostname,culprit_devices,culprit_uuids,duration_ms,attempts,message";

double Millis(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

Json NodeJson(const NodeReport& n) {
  Json culprit = Json::array();
  for (const CulpritDevice& d : n.culprit) {
    Json device = Json::object();
    device["device"] = d.index;
    device["uuid"] = d.uuid;
    culprit.push_back(std::move(device));
  }
  Json out = Json::object();
  out["node"] = n.node;
  out["verdict"] = std::string(NodeVerdictName(n.verdict));
  out["hostname"] = n.hostname;
  out["culprit"] = std::move(culprit);
  out["duration_ms"] = Millis(n.duration);
  out["attempts"] = n.attempts;
  out["message"] = n.message;
  return out;
}

Json SummaryJson(const FleetReport& report) {
  const FleetCounts c = CountVerdicts(report.nodes);
  Json out = Json::object();
  out["nodes"] = c.nodes;
  out["ok"] = c.ok;
  out["warn"] = c.warn;
  out["wrong"] = c.wrong;
  out["hang"] = c.hang;
  out["error"] = c.error;
  out["busy"] = c.busy;
  out["unreachable"] = c.unreachable;
  out["unauthenticated"] = c.unauthenticated;
  out["wall_ms"] = Millis(report.wall);
  out["exit_code"] = FleetExitCode(report.nodes);
  return out;
}

// WRONG and HANG are what the collective did; ERROR (the node's check broke in its
// infrastructure), UNREACHABLE and UNAUTHENTICATED (not checked at all) are JUnit errors.
bool IsFailure(NodeVerdict v) { return v == NodeVerdict::kWrong || v == NodeVerdict::kHang; }

bool IsError(NodeVerdict v) {
  return v == NodeVerdict::kError || v == NodeVerdict::kUnreachable ||
         v == NodeVerdict::kUnauthenticated;
}

std::string TestCaseXml(const NodeReport& n) {
  std::string out =
      absl::StrFormat("  <testcase classname=\"colltest.fleet\" name=\"%s\" time=\"%.3f\">\n",
                      XmlAttr(n.node), absl::ToDoubleSeconds(n.duration));
  const std::string verdict(NodeVerdictName(n.verdict));
  const std::string culprit = CulpritText(n.culprit);
  const std::string details = absl::StrCat(
      verdict, culprit.empty() ? "" : " on ", culprit, ": ", n.message,
      n.hostname.empty() ? "" : absl::StrCat("\nhost: ", n.hostname), "\nattempts: ", n.attempts);
  if (IsFailure(n.verdict) || IsError(n.verdict)) {
    absl::StrAppend(&out, OutcomeXml(IsFailure(n.verdict) ? Outcome::kFailure : Outcome::kError,
                                     verdict, n.message, details));
  } else if (n.verdict == NodeVerdict::kBusy) {
    absl::StrAppend(&out, "    <skipped message=\"", XmlAttr(n.message), "\"/>\n");
  } else if (n.verdict == NodeVerdict::kWarn) {
    absl::StrAppend(&out, "    <system-out>", XmlText(details), "</system-out>\n");
  }
  absl::StrAppend(&out, "  </testcase>\n");
  return out;
}

}  // namespace

std::string FormatFleet(const FleetReport& report, OutputFormat format) {
  switch (format) {
    case OutputFormat::kJson:
      return FormatFleetJson(report);
    case OutputFormat::kCsv:
      return FormatFleetCsv(report);
    case OutputFormat::kJunit:
      return FormatFleetJunit(report);
    case OutputFormat::kTable:
      break;
  }
  return FormatFleetTable(report);
}

std::string FormatFleetTable(const FleetReport& report) {
  TextTable table({{"NODE"},
                   {"VERDICT"},
                   {"HOST"},
                   {"CULPRIT"},
                   {"TIME", TextTable::Align::kRight},
                   {"TRIES", TextTable::Align::kRight},
                   {"MESSAGE"}});
  for (const NodeReport& n : report.nodes) {
    table.AddRow({n.node, std::string(NodeVerdictName(n.verdict)), n.hostname,
                  CulpritText(n.culprit),
                  absl::StrFormat("%.2fs", absl::ToDoubleSeconds(n.duration)),
                  absl::StrCat(n.attempts), n.message});
  }
  return absl::StrCat(table.Render(), "\n", FleetSummaryLine(report.nodes, report.wall), "\n");
}

std::string FormatFleetJson(const FleetReport& report) {
  Json nodes = Json::array();
  for (const NodeReport& n : report.nodes) nodes.push_back(NodeJson(n));
  Json out = DocumentJson("colltest.fleet");
  out["nodes"] = std::move(nodes);
  out["summary"] = SummaryJson(report);
  return DumpJson(out);
}

std::string FormatFleetCsv(const FleetReport& report) {
  std::string out = absl::StrCat(kCsvHeader, "\n");
  for (const NodeReport& n : report.nodes) {
    std::vector<std::string> devices;
    std::vector<std::string> uuids;
    for (const CulpritDevice& d : n.culprit) {
      devices.push_back(absl::StrCat(d.index));
      uuids.push_back(d.uuid);
    }
    const std::vector<std::string> row = {
        CsvField(n.node),
        std::string(NodeVerdictName(n.verdict)),
        CsvField(n.hostname),
        absl::StrJoin(devices, ";"),
        CsvField(absl::StrJoin(uuids, ";")),
        absl::StrFormat("%.1f", Millis(n.duration)),
        absl::StrCat(n.attempts),
        CsvField(n.message),
    };
    absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
  }
  return out;
}

std::string FormatFleetJunit(const FleetReport& report) {
  SuiteCounts counts;
  counts.tests = static_cast<int>(report.nodes.size());
  counts.seconds = absl::ToDoubleSeconds(report.wall);
  std::string cases;
  for (const NodeReport& n : report.nodes) {
    counts.failures += IsFailure(n.verdict) ? 1 : 0;
    counts.errors += IsError(n.verdict) ? 1 : 0;
    counts.skipped += n.verdict == NodeVerdict::kBusy ? 1 : 0;
    absl::StrAppend(&cases, TestCaseXml(n));
  }
  Properties properties = {{"summary", FleetSummaryLine(report.nodes, report.wall)}};
  // Each node's host and the UUIDs of its culprit devices, so that CI names the boards to pull.
  for (const NodeReport& n : report.nodes) {
    if (!n.hostname.empty()) properties.emplace_back(absl::StrCat(n.node, ".hostname"), n.hostname);
    for (const CulpritDevice& d : n.culprit) {
      properties.emplace_back(absl::StrCat(n.node, ".device.", d.index, ".uuid"), d.uuid);
    }
  }
  // The fleet check ran here, now: the nodes' own hosts are in the properties.
  return absl::StrCat(kXmlDeclaration,
                      SuiteXml("colltest.fleet", counts, SuiteOrigin{}, properties, cases));
}

}  // namespace colltest::client
