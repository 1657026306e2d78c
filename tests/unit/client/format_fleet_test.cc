#include "client/fleet/format_fleet.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace colltest::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

NodeReport Node(std::string name, NodeVerdict verdict, std::string message, int attempts = 1) {
  NodeReport n;
  n.node = std::move(name);
  n.verdict = verdict;
  n.message = std::move(message);
  n.attempts = attempts;
  n.duration = absl::Milliseconds(1250);
  return n;
}

// One node of every verdict but WARN and HANG, and a HANG naming its device.
FleetReport SampleFleet() {
  FleetReport report;
  NodeReport ok = Node("10.0.0.1:50051", NodeVerdict::kOk, "healthy: 2 ranks");
  ok.hostname = "node1";
  report.nodes.push_back(ok);
  NodeReport hang = Node("svc/10.0.0.2:50051", NodeVerdict::kHang, "HANG: rank 1 never arrived");
  hang.hostname = "node2";
  hang.culprit = {{1, "GPU-8d1f"}};
  report.nodes.push_back(hang);
  report.nodes.push_back(Node("10.0.0.3:50051", NodeVerdict::kWrong, "WRONG: pair 0-1, \"x\""));
  report.nodes.push_back(
      Node("10.0.0.4:50051", NodeVerdict::kUnreachable, "UNAVAILABLE: refused", 3));
  report.nodes.push_back(Node("10.0.0.5:50051", NodeVerdict::kUnauthenticated,
                              "UNAUTHENTICATED: missing bearer token"));
  report.nodes.push_back(Node("10.0.0.6:50051", NodeVerdict::kBusy, "busy: other processes"));
  report.nodes.push_back(Node("10.0.0.7:50051", NodeVerdict::kError, "FAILED_PRECONDITION: x"));
  report.wall = absl::Milliseconds(4200);
  return report;
}

TEST(FormatFleetTest, TableHasARowPerNodeAndTheSummary) {
  const std::string table = FormatFleetTable(SampleFleet());
  const std::vector<std::string> lines = absl::StrSplit(table, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 1u + 7u + 1u) << table;
  EXPECT_TRUE(absl::StartsWith(lines[0], "NODE")) << lines[0];
  EXPECT_THAT(lines[2], HasSubstr("svc/10.0.0.2:50051"));
  EXPECT_THAT(lines[2], HasSubstr("HANG"));
  EXPECT_THAT(lines[2], HasSubstr("device 1 (GPU-8d1f)"));
  EXPECT_THAT(lines[2], HasSubstr("1.25s"));
  EXPECT_THAT(lines[4], HasSubstr("UNREACHABLE"));
  EXPECT_EQ(lines[8],
            "fleet: 7 nodes in 4.2s: 1 OK, 1 WRONG, 1 HANG, 1 ERROR, 1 UNAUTHENTICATED, 1 BUSY, "
            "1 UNREACHABLE (10.0.0.4:50051)");
}

TEST(FormatFleetTest, TableEscapesNodeText) {
  FleetReport report;
  report.nodes.push_back(Node("n", NodeVerdict::kError, "bad\x1b[2Jthing\nnext"));
  const std::string table = FormatFleetTable(report);
  EXPECT_THAT(table, Not(HasSubstr("\x1b")));
  EXPECT_THAT(table, HasSubstr("bad\\x1b[2Jthing\\x0anext"));
}

TEST(FormatFleetTest, JsonHasNodesAndSummaryCounts) {
  const nlohmann::json json = nlohmann::json::parse(FormatFleetJson(SampleFleet()));
  ASSERT_EQ(json["nodes"].size(), 7u);
  const nlohmann::json& hang = json["nodes"][1];
  EXPECT_EQ(hang["node"], "svc/10.0.0.2:50051");
  EXPECT_EQ(hang["verdict"], "HANG");
  EXPECT_EQ(hang["hostname"], "node2");
  ASSERT_EQ(hang["culprit"].size(), 1u);
  EXPECT_EQ(hang["culprit"][0]["device"], 1);
  EXPECT_EQ(hang["culprit"][0]["uuid"], "GPU-8d1f");
  EXPECT_DOUBLE_EQ(hang["duration_ms"].get<double>(), 1250.0);
  EXPECT_EQ(hang["attempts"], 1);
  EXPECT_EQ(hang["message"], "HANG: rank 1 never arrived");
  EXPECT_EQ(json["nodes"][0]["culprit"], nlohmann::json::array());
  EXPECT_EQ(json["nodes"][3]["attempts"], 3);
  const nlohmann::json& s = json["summary"];
  EXPECT_EQ(s["nodes"], 7);
  EXPECT_EQ(s["ok"], 1);
  EXPECT_EQ(s["warn"], 0);
  EXPECT_EQ(s["wrong"], 1);
  EXPECT_EQ(s["hang"], 1);
  EXPECT_EQ(s["error"], 1);
  EXPECT_EQ(s["busy"], 1);
  EXPECT_EQ(s["unreachable"], 1);
  EXPECT_EQ(s["unauthenticated"], 1);
  EXPECT_DOUBLE_EQ(s["wall_ms"].get<double>(), 4200.0);
  EXPECT_EQ(s["exit_code"], 3);
}

TEST(FormatFleetTest, JunitHasATestcasePerNode) {
  const std::string xml = FormatFleetJunit(SampleFleet());
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"colltest.fleet\" tests=\"7\" failures=\"2\" "
                             "errors=\"3\" skipped=\"1\" time=\"4.200\" timestamp=\""));
  size_t testcases = 0;
  for (size_t at = xml.find("<testcase "); at != std::string::npos;
       at = xml.find("<testcase ", at + 1)) {
    ++testcases;
  }
  EXPECT_EQ(testcases, 7u);
  EXPECT_THAT(xml, HasSubstr("name=\"svc/10.0.0.2:50051\" time=\"1.250\">\n    <failure "
                             "type=\"HANG\" message=\"HANG: rank 1 never arrived\">HANG on device "
                             "1 (GPU-8d1f): HANG: rank 1 never arrived\nhost: node2\nattempts: 1"));
  EXPECT_THAT(xml, HasSubstr("<failure type=\"WRONG\" message=\"WRONG: pair 0-1, &quot;x&quot;\""));
  EXPECT_THAT(xml, HasSubstr("<error type=\"UNREACHABLE\" message=\"UNAVAILABLE: refused\">"));
  EXPECT_THAT(xml, HasSubstr("<error type=\"UNAUTHENTICATED\""));
  EXPECT_THAT(xml, HasSubstr("<skipped message=\"busy: other processes\"/>"));
  EXPECT_THAT(xml, HasSubstr("name=\"10.0.0.1:50051\" time=\"1.250\">\n  </testcase>"));
}

TEST(FormatFleetTest, CsvHasARowPerNode) {
  FleetReport report = SampleFleet();
  report.nodes[1].culprit.push_back({2, "GPU-aa"});
  const std::string csv = FormatFleetCsv(report);
  const std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[0],
            "node,verdict,hostname,culprit_devices,culprit_uuids,duration_ms,attempts,message");
  EXPECT_EQ(
      lines[2],
      "svc/10.0.0.2:50051,HANG,node2,1;2,GPU-8d1f;GPU-aa,1250.0,1,HANG: rank 1 never arrived");
  EXPECT_EQ(lines[3], "10.0.0.3:50051,WRONG,,,,1250.0,1,\"WRONG: pair 0-1, \"\"x\"\"\"");
}

TEST(FormatFleetTest, FormatPicksTheRenderer) {
  const FleetReport report = SampleFleet();
  EXPECT_EQ(FormatFleet(report, OutputFormat::kTable), FormatFleetTable(report));
  EXPECT_EQ(FormatFleet(report, OutputFormat::kJson), FormatFleetJson(report));
  EXPECT_EQ(FormatFleet(report, OutputFormat::kCsv), FormatFleetCsv(report));
  EXPECT_EQ(FormatFleet(report, OutputFormat::kJunit), FormatFleetJunit(report));
}

}  // namespace
}  // namespace colltest::client
