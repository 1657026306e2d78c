// The comparison of two runs in the four formats, alone and embedded in a run's report.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/format/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/unit/client/sample_compare.h"
#include "tests/unit/client/sample_run.h"

namespace colltest::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Json = nlohmann::json;

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(FormatCompareTableTest, HeaderMachinesRowsAndVerdict) {
  const std::vector<std::string> lines = Lines(FormatCompareTable(testing::SampleComparison()));
  ASSERT_EQ(lines.size(), 11u);
  EXPECT_EQ(lines[0], "compare r-base -> r-42 (baseline default)  threshold 5 %");
  // The driver changed between the runs: both setups are shown.
  EXPECT_EQ(
      lines[1],
      "a: gpu-7 cuda 4 x NVIDIA H200, driver 12.4, runtime 12.8, colltest 0.1.0 (abc), key k1");
  EXPECT_EQ(
      lines[2],
      "b: gpu-7 cuda 4 x NVIDIA H200, driver 13.0, runtime 12.8, colltest 0.1.0 (def), key k1");
  EXPECT_THAT(lines[3], StartsWith("variant     mode   W   m     n  dtype  median a  median b   "
                                   "change  verdict      reason"));
  EXPECT_EQ(lines[4],
            "lamport     graph  4  64  7168  bf16      12.10     14.00  +15.7 %  REGRESSION   "
            "median 12.10 us -> 14.00 us (+15.7 %), p10 13.80 us > p90 12.40 us");
  EXPECT_THAT(lines[6], HasSubstr("20.00     15.00  -25.0 %  IMPROVEMENT"));
  EXPECT_THAT(lines[7],
              HasSubstr("8.00      8.00        -  REGRESSION   status OK -> WRONG, mismatches"));
  EXPECT_THAT(lines[8], HasSubstr("30.00         -        -  ONLY_A       missing from run b"));
  EXPECT_THAT(lines[9], HasSubstr("    -      9.00        -  ONLY_B       new in run b"));
  EXPECT_EQ(lines[10], testing::SampleComparison().message());
}

TEST(FormatCompareTableTest, OneMachineLineWhenNothingChangedAndANoteAcrossMachines) {
  const std::string clean = FormatCompareTable(testing::SampleCleanComparison());
  EXPECT_THAT(clean, HasSubstr("\nmachine: gpu-7 cuda 4 x NVIDIA H200, driver 13.0, "));
  EXPECT_THAT(clean, Not(HasSubstr("\na: ")));
  EXPECT_THAT(clean, Not(HasSubstr("note:")));

  v1::CompareResponse other = testing::SampleCleanComparison();
  other.mutable_machine_a()->set_key("k2");
  other.mutable_machine_a()->set_hostname("gpu-8");
  const std::string across = FormatCompareTable(other);
  EXPECT_THAT(across, HasSubstr("\na: gpu-8 cuda "));
  EXPECT_THAT(across, HasSubstr("\nnote: the runs are from different machines\n"));
}

TEST(FormatCompareTableTest, ServerTextIsEscaped) {
  v1::CompareResponse r = testing::SampleCleanComparison();
  r.mutable_machine_b()->set_hostname("gpu\x1b[2J");
  r.set_message("no regression\x1b[1A");
  const std::string table = FormatCompareTable(r);
  EXPECT_EQ(table.find('\x1b'), std::string::npos);
  EXPECT_THAT(table, HasSubstr("gpu\\x1b[2J"));
}

TEST(FormatCompareJsonTest, TopLevelAndMachines) {
  const Json json = Json::parse(FormatCompareJson(testing::SampleComparison()));
  EXPECT_EQ(json["run_a"], "r-base");
  EXPECT_EQ(json["run_b"], "r-42");
  EXPECT_EQ(json["baseline"], "default");
  EXPECT_DOUBLE_EQ(json["threshold"].get<double>(), 0.05);
  EXPECT_EQ(json["regressed"], true);
  EXPECT_EQ(json["regressions"], 3);
  EXPECT_EQ(json["improvements"], 1);
  EXPECT_THAT(json["message"].get<std::string>(), StartsWith("3 of 6 cases regressed"));
  EXPECT_EQ(json["machine_a"]["driver_version"], "12.4");
  EXPECT_EQ(json["machine_b"]["driver_version"], "13.0");
  EXPECT_EQ(json["machine_b"]["build_commit"], "def");
  EXPECT_EQ(json["machine_b"]["devices"].size(), 4u);
  EXPECT_EQ(json["machine_b"]["devices"][3]["uuid"], "GPU-3");
  ASSERT_EQ(json["cases"].size(), 6u);
}

TEST(FormatCompareJsonTest, CaseFieldsWithTheRunJsonNames) {
  const Json json = Json::parse(FormatCompareJson(testing::SampleComparison()));
  const Json& c = json["cases"][0];
  EXPECT_EQ(c["variant"], "lamport");
  EXPECT_EQ(c["mode"], "graph");
  EXPECT_EQ(c["world"], 4);
  EXPECT_EQ(c["m"], 64);
  EXPECT_EQ(c["n"], 7168);
  EXPECT_EQ(c["dtype"], "bf16");
  EXPECT_EQ(c["verdict"], "REGRESSION");
  EXPECT_EQ(c["reason"], "median 12.10 us -> 14.00 us (+15.7 %), p10 13.80 us > p90 12.40 us");
  EXPECT_EQ(c["status_a"], "OK");
  EXPECT_EQ(c["status_b"], "OK");
  EXPECT_DOUBLE_EQ(c["median_a_us"].get<double>(), 12.1);
  EXPECT_DOUBLE_EQ(c["median_b_us"].get<double>(), 14.0);
  EXPECT_DOUBLE_EQ(c["p90_a_us"].get<double>(), 12.4);
  EXPECT_DOUBLE_EQ(c["p10_b_us"].get<double>(), 13.8);
  EXPECT_NEAR(c["ratio"].get<double>(), 14.0 / 12.1, 1e-12);
  EXPECT_EQ(json["cases"][2]["variant"], "auto");
  EXPECT_EQ(json["cases"][2]["dtype"], "fp16");
  EXPECT_EQ(json["cases"][3]["status_b"], "WRONG");
  EXPECT_EQ(json["cases"][3]["mismatches_b"], 12);
  EXPECT_EQ(json["cases"][3]["mismatches_a"], 0);
}

TEST(FormatCompareJsonTest, TheMissingSideIsNull) {
  const Json json = Json::parse(FormatCompareJson(testing::SampleComparison()));
  const Json& only_a = json["cases"][4];
  EXPECT_EQ(only_a["verdict"], "ONLY_A");
  EXPECT_EQ(only_a["status_a"], "OK");
  EXPECT_DOUBLE_EQ(only_a["median_a_us"].get<double>(), 30.0);
  EXPECT_TRUE(only_a["status_b"].is_null());
  EXPECT_TRUE(only_a["median_b_us"].is_null());
  EXPECT_TRUE(only_a["mismatches_b"].is_null());
  const Json& only_b = json["cases"][5];
  EXPECT_EQ(only_b["verdict"], "ONLY_B");
  EXPECT_TRUE(only_b["status_a"].is_null());
  EXPECT_TRUE(only_b["median_a_us"].is_null());
  EXPECT_DOUBLE_EQ(only_b["median_b_us"].get<double>(), 9.0);
}

TEST(FormatCompareCsvTest, OneRowPerCaseQuotedWhereNeeded) {
  const std::vector<std::string> lines = Lines(FormatCompareCsv(testing::SampleComparison()));
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[0],
            "run_a,run_b,variant,mode,world,m,n,dtype,verdict,status_a,status_b,median_a_us,"
            "median_b_us,p10_a_us,p90_a_us,p10_b_us,p90_b_us,ratio,reason,epilogue,keep_normed,"
            "fp8_format");
  EXPECT_THAT(lines[1], StartsWith("r-base,r-42,lamport,graph,4,64,7168,bf16,REGRESSION,OK,OK,12.1,"
                                   "14,11.9,12.4,13.8,14.3,1.157"));
  EXPECT_THAT(lines[4], HasSubstr(",REGRESSION,OK,WRONG,"));
  EXPECT_THAT(lines[4], HasSubstr(",\"status OK -> WRONG, mismatches 0 -> 12\""));
  EXPECT_EQ(lines[5],
            "r-base,r-42,nccl,eager,4,1,7168,bf16,ONLY_A,OK,,30,,29.8,30.3,,,,missing from run b,"
            "none,false,");
  EXPECT_EQ(lines[6],
            "r-base,r-42,two_kernel,eager,4,1,7168,bf16,ONLY_B,,OK,,9,,,8.8,9.3,,new in run b,none,"
            "false,");
}

TEST(FormatCompareJunitTest, RegressionsAndMissingCasesFail) {
  const std::string xml = FormatCompareJunit(testing::SampleComparison());
  EXPECT_THAT(xml, StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite "
                              "name=\"comparison\" tests=\"6\" failures=\"3\" errors=\"0\" "
                              "skipped=\"0\""));
  EXPECT_EQ(Count(xml, "<testcase "), 6);
  EXPECT_EQ(Count(xml, "<failure type=\"REGRESSION\""), 2);
  EXPECT_EQ(Count(xml, "<failure type=\"ONLY_A\" message=\"missing from run b\""), 1);
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"colltest.compare.lamport\" name=\"graph w=4 "
                             "m=64 n=7168 bf16\" time=\"0\">\n    <failure type=\"REGRESSION\" "
                             "message=\"median 12.10 us -&gt; 14.00 us"));
  EXPECT_THAT(xml, HasSubstr("name=\"eager w=4 m=1 n=7168 bf16\" time=\"0\"/>\n"));
  EXPECT_THAT(xml, HasSubstr("<system-out>IMPROVEMENT: median 20.00 us -&gt; 15.00 us"));
  EXPECT_THAT(xml, HasSubstr("<system-out>ONLY_B: new in run b</system-out>"));
  EXPECT_THAT(xml, HasSubstr("<property name=\"run_a\" value=\"r-base\"/>"));
  EXPECT_THAT(xml, HasSubstr("<property name=\"baseline\" value=\"default\"/>"));
}

TEST(FormatCompareJunitTest, CleanComparisonHasNoFailure) {
  const std::string xml = FormatCompareJunit(testing::SampleCleanComparison());
  EXPECT_THAT(xml, HasSubstr("tests=\"2\" failures=\"0\""));
  EXPECT_THAT(xml, Not(HasSubstr("<failure")));
}

TEST(FormatCompareTest, DispatchesOnTheFormat) {
  const v1::CompareResponse r = testing::SampleComparison();
  EXPECT_EQ(FormatCompare(r, OutputFormat::kTable), FormatCompareTable(r));
  EXPECT_EQ(FormatCompare(r, OutputFormat::kJson), FormatCompareJson(r));
  EXPECT_EQ(FormatCompare(r, OutputFormat::kCsv), FormatCompareCsv(r));
  EXPECT_EQ(FormatCompare(r, OutputFormat::kJunit), FormatCompareJunit(r));
}

TEST(FormatRunWithComparisonTest, TableIsTheRunThenTheComparison) {
  const v1::RunResult run = testing::SampleRun();
  const v1::CompareResponse r = testing::SampleComparison();
  EXPECT_EQ(FormatRunWithComparison(run, r, OutputFormat::kTable),
            FormatRunTable(run) + "\n" + FormatCompareTable(r));
}

TEST(FormatRunWithComparisonTest, JsonHasAComparisonNextToCases) {
  const Json json = Json::parse(FormatRunWithComparison(
      testing::SampleRun(), testing::SampleComparison(), OutputFormat::kJson));
  EXPECT_EQ(json["run_id"], "r-42");
  EXPECT_EQ(json["cases"].size(), 4u);
  EXPECT_EQ(json["comparison"]["run_a"], "r-base");
  EXPECT_EQ(json["comparison"]["regressed"], true);
  EXPECT_EQ(json["comparison"]["cases"].size(), 6u);
  // The run's part is the run's own JSON.
  Json run_only = json;
  run_only.erase("comparison");
  EXPECT_EQ(run_only, Json::parse(FormatRunJson(testing::SampleRun())));
}

TEST(FormatRunWithComparisonTest, JunitHoldsBothSuites) {
  const std::string xml = FormatRunWithComparison(testing::SampleRun(), testing::SampleComparison(),
                                                  OutputFormat::kJunit);
  EXPECT_EQ(Count(xml, "<?xml "), 1);
  EXPECT_THAT(xml, HasSubstr("?>\n<testsuites>\n<testsuite name=\"colltest\" tests=\"4\""));
  EXPECT_THAT(xml, HasSubstr("</testsuite>\n<testsuite name=\"comparison\" tests=\"6\""));
  EXPECT_THAT(xml, ::testing::EndsWith("</testsuite>\n</testsuites>\n"));
}

}  // namespace
}  // namespace colltest::client
