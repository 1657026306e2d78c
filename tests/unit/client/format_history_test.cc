// `history` and `baseline` outputs, and the names they print.
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/format/format.h"
#include "common/names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace colltest::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

v1::ListRunsResponse SampleHistory() {
  v1::ListRunsResponse runs;
  v1::RunSummary* r = runs.add_runs();
  r->set_run_id("r-7");
  r->set_state(v1::RUN_STATE_INTERRUPTED);
  r->set_cases(12);
  r->set_ok(11);
  r->set_failed(1);
  r->set_created_unix_ms(1700000000000);
  r->set_finished_unix_ms(1700000060000);
  r->set_label("ci, nightly");
  r->set_owner("ci-bot");
  r->set_hostname("gpu-7");
  r->set_backend("cuda");
  r->set_machine_key("k1");
  r->add_variants(v1::VARIANT_LAMPORT);
  r->add_variants(v1::VARIANT_AUTO);
  runs.add_runs()->set_run_id("r-6");
  runs.set_next_page_token("tok-2");
  return runs;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

TEST(FormatHistoryTest, TableWithIsoTimesHostAndTheTokenToContinue) {
  absl::StatusOr<std::string> table = FormatRuns(SampleHistory(), OutputFormat::kTable);
  ASSERT_TRUE(table.ok());
  const std::vector<std::string> lines = Lines(*table);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0],
            "run_id  created (UTC)         state        cases  ok  failed  label        owner   "
            "host");
  EXPECT_EQ(lines[1],
            "r-7     2023-11-14T22:13:20Z  INTERRUPTED     12  11       1  ci, nightly  ci-bot  "
            "gpu-7");
  EXPECT_EQ(lines[2], "r-6     -                     UNSPECIFIED      0   0       0");
  EXPECT_EQ(lines[3], "more runs: --page-token tok-2");
}

TEST(FormatHistoryTest, LastPageHasNoContinuation) {
  v1::ListRunsResponse runs = SampleHistory();
  runs.clear_next_page_token();
  EXPECT_THAT(*FormatRuns(runs, OutputFormat::kTable), Not(HasSubstr("more runs")));
}

TEST(FormatHistoryTest, JsonHasRunsAndTheNextPageToken) {
  const Json json = Json::parse(*FormatRuns(SampleHistory(), OutputFormat::kJson));
  EXPECT_EQ(json["next_page_token"], "tok-2");
  ASSERT_EQ(json["runs"].size(), 2u);
  const Json& r = json["runs"][0];
  EXPECT_EQ(r["run_id"], "r-7");
  EXPECT_EQ(r["state"], "INTERRUPTED");
  EXPECT_EQ(r["cases"], 12);
  EXPECT_EQ(r["ok"], 11);
  EXPECT_EQ(r["failed"], 1);
  EXPECT_EQ(r["created_unix_ms"], 1700000000000);
  EXPECT_EQ(r["finished_unix_ms"], 1700000060000);
  EXPECT_EQ(r["label"], "ci, nightly");
  EXPECT_EQ(r["owner"], "ci-bot");
  EXPECT_EQ(r["hostname"], "gpu-7");
  EXPECT_EQ(r["backend"], "cuda");
  EXPECT_EQ(r["machine_key"], "k1");
  EXPECT_EQ(r["variants"], Json::array({"lamport", "auto"}));
}

TEST(FormatHistoryTest, CsvOneRowPerRun) {
  const std::vector<std::string> lines = Lines(*FormatRuns(SampleHistory(), OutputFormat::kCsv));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "run_id,created,created_unix_ms,state,cases,ok,failed,label,owner,hostname,backend,"
            "machine_key,variants");
  EXPECT_EQ(lines[1],
            "r-7,2023-11-14T22:13:20Z,1700000000000,INTERRUPTED,12,11,1,\"ci, nightly\",ci-bot,"
            "gpu-7,cuda,k1,lamport;auto");
}

TEST(FormatHistoryTest, JunitIsRefused) {
  absl::StatusOr<std::string> junit = FormatRuns(SampleHistory(), OutputFormat::kJunit);
  EXPECT_THAT(junit.status().message(), HasSubstr("history prints table, json or csv, not junit"));
}

v1::Baseline SampleBaseline() {
  v1::Baseline b;
  b.set_name("default");
  b.set_machine_key("k1");
  b.set_run_id("r-7");
  b.set_set_unix_ms(1700000000000);
  b.set_set_by("alice");
  b.set_hostname("gpu-7");
  return b;
}

TEST(FormatBaselineTest, SetPrintsOneLine) {
  EXPECT_EQ(*FormatBaseline(SampleBaseline(), OutputFormat::kTable),
            "baseline default of gpu-7 (key k1) = r-7\n");
  const Json json = Json::parse(*FormatBaseline(SampleBaseline(), OutputFormat::kJson));
  EXPECT_EQ(json["name"], "default");
  EXPECT_EQ(json["machine_key"], "k1");
  EXPECT_EQ(json["run_id"], "r-7");
  EXPECT_EQ(json["set_by"], "alice");
  EXPECT_EQ(json["set_unix_ms"], 1700000000000);
  EXPECT_FALSE(FormatBaseline(SampleBaseline(), OutputFormat::kCsv).ok());
}

TEST(FormatBaselineTest, ListTableAndJson) {
  v1::ListBaselinesResponse list;
  *list.add_baselines() = SampleBaseline();
  v1::Baseline* nightly = list.add_baselines();
  *nightly = SampleBaseline();
  nightly->set_name("nightly");
  nightly->set_run_id("r-9");
  const std::vector<std::string> lines = Lines(*FormatBaselines(list, OutputFormat::kTable));
  EXPECT_THAT(lines,
              ElementsAre("name     host   machine key  run_id  set (UTC)             set by",
                          "default  gpu-7  k1           r-7     2023-11-14T22:13:20Z  alice",
                          "nightly  gpu-7  k1           r-9     2023-11-14T22:13:20Z  alice"));
  const Json json = Json::parse(*FormatBaselines(list, OutputFormat::kJson));
  ASSERT_EQ(json["baselines"].size(), 2u);
  EXPECT_EQ(json["baselines"][1]["name"], "nightly");
  EXPECT_FALSE(FormatBaselines(list, OutputFormat::kJunit).ok());
}

TEST(NamesTest, InterruptedAndTheVerdicts) {
  EXPECT_EQ(common::RunStateName(v1::RUN_STATE_INTERRUPTED), "INTERRUPTED");
  EXPECT_EQ(common::ParseRunStateName("interrupted"), v1::RUN_STATE_INTERRUPTED);
  EXPECT_EQ(common::ParseRunStateName("Done"), v1::RUN_STATE_DONE);
  EXPECT_EQ(common::ParseRunStateName("unspecified"), std::nullopt);
  EXPECT_EQ(common::CompareVerdictName(v1::COMPARE_VERDICT_REGRESSION), "REGRESSION");
  EXPECT_EQ(common::CompareVerdictName(v1::COMPARE_VERDICT_IMPROVEMENT), "IMPROVEMENT");
  EXPECT_EQ(common::CompareVerdictName(v1::COMPARE_VERDICT_SAME), "SAME");
  EXPECT_EQ(common::CompareVerdictName(v1::COMPARE_VERDICT_ONLY_A), "ONLY_A");
  EXPECT_EQ(common::CompareVerdictName(v1::COMPARE_VERDICT_ONLY_B), "ONLY_B");
}

}  // namespace
}  // namespace colltest::client
