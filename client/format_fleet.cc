#include "client/format_fleet.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/csv.h"
#include "client/format_json.h"
#include "client/junit_xml.h"
#include "client/text_table.h"

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

bool IsFailure(NodeVerdict v) {
  return v == NodeVerdict::kWrong || v == NodeVerdict::kHang || v == NodeVerdict::kError;
}

bool IsNotChecked(NodeVerdict v) {
  return v == NodeVerdict::kUnreachable || v == NodeVerdict::kUnauthenticated;
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
  if (IsFailure(n.verdict) || IsNotChecked(n.verdict)) {
    const char* element = IsFailure(n.verdict) ? "failure" : "error";
    absl::StrAppend(&out, "    <", element, " type=\"", verdict, "\" message=\"",
                    XmlAttr(n.message), "\">", XmlText(details), "</", element, ">\n");
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
  Json out = Json::object();
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
  int failures = 0;
  int errors = 0;
  int skipped = 0;
  std::string cases;
  for (const NodeReport& n : report.nodes) {
    failures += IsFailure(n.verdict) ? 1 : 0;
    errors += IsNotChecked(n.verdict) ? 1 : 0;
    skipped += n.verdict == NodeVerdict::kBusy ? 1 : 0;
    absl::StrAppend(&cases, TestCaseXml(n));
  }
  return absl::StrCat(
      kXmlDeclaration,
      absl::StrFormat("<testsuite name=\"colltest.fleet\" tests=\"%d\" failures=\"%d\" "
                      "errors=\"%d\" skipped=\"%d\" time=\"%.3f\">\n",
                      report.nodes.size(), failures, errors, skipped,
                      absl::ToDoubleSeconds(report.wall)),
      "  <properties>\n    <property name=\"summary\" value=\"",
      XmlAttr(FleetSummaryLine(report.nodes, report.wall)), "\"/>\n  </properties>\n", cases,
      "</testsuite>\n");
}

}  // namespace colltest::client
