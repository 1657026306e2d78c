#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/client/sample_run.h"

namespace colltest::client {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

TEST(FormatRunTableTest, HeaderRowsAndSummary) {
  std::vector<std::string> lines = Lines(FormatRunTable(testing::SampleRun()));
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[0], "run r-42  backend cpu  state DONE");
  EXPECT_THAT(lines[1], MatchesRegex("variant +mode +W +m +n +dtype +status +median us +p10 +p90 "
                                     "+busbw GB/s +mismatches +max ulp +message"));
  EXPECT_THAT(lines[2], MatchesRegex("lamport +eager +2 +64 +7168 +bf16 +OK +12\\.3 +11\\.5 "
                                     "+14\\.2 +37\\.5 +0 +1"));
  EXPECT_THAT(lines[3], StartsWith("auto(lamport_tb)  graph"));
  EXPECT_THAT(lines[3], HasSubstr("WRONG"));
  EXPECT_THAT(lines[3], HasSubstr("3 mismatches, \"out\" <rank 1> & more"));
  // No timing for a hang: a dash, not a zero that reads as infinitely fast.
  EXPECT_THAT(lines[4], MatchesRegex("one_stage +eager +2 +1 +7168 +bf16 +HANG +- +- +- +- +0 +0 "
                                     "+rank 1 waited for rank 0 in start_sync"));
  EXPECT_THAT(lines[5], HasSubstr("UNSUPPORTED"));
  EXPECT_EQ(lines[6], "4 cases: 1 OK, 1 WRONG, 1 HANG, 1 UNSUPPORTED");
}

TEST(FormatRunTableTest, ColumnsAreAligned) {
  std::vector<std::string> lines = Lines(FormatRunTable(testing::SampleRun()));
  ASSERT_GE(lines.size(), 6u);
  const size_t status_column = lines[1].find("status");
  ASSERT_NE(status_column, std::string::npos);
  for (size_t i = 2; i <= 5; ++i) {
    ASSERT_GT(lines[i].size(), status_column) << lines[i];
    EXPECT_EQ(lines[i][status_column - 1], ' ') << lines[i];
    EXPECT_NE(lines[i][status_column], ' ') << lines[i];
  }
}

TEST(FormatDevicesTest, TableAndJson) {
  v1::ListDevicesResponse devices;
  devices.set_backend("cuda");
  devices.set_version("0.1.0");
  devices.set_max_world_size(8);
  devices.add_variants(v1::VARIANT_LAMPORT);
  devices.add_variants(v1::VARIANT_NCCL);
  v1::Device* d = devices.add_devices();
  d->set_index(0);
  d->set_name("NVIDIA H200");
  d->set_memory_bytes(uint64_t{141} << 30);
  d->set_backend("cuda");

  absl::StatusOr<std::string> table = FormatDevices(devices, OutputFormat::kTable);
  ASSERT_TRUE(table.ok());
  EXPECT_THAT(*table, HasSubstr("variants: lamport, nccl"));
  EXPECT_THAT(*table, MatchesRegex("(.|\n)*0 +NVIDIA H200 +141\\.0 +cuda\n"));

  absl::StatusOr<std::string> json = FormatDevices(devices, OutputFormat::kJson);
  ASSERT_TRUE(json.ok());
  EXPECT_THAT(*json, HasSubstr("\"variants\": [\n    \"lamport\",\n    \"nccl\"\n  ]"));
  EXPECT_THAT(*json, HasSubstr("\"memory_bytes\": 151397597184"));

  EXPECT_FALSE(FormatDevices(devices, OutputFormat::kCsv).ok());
}

TEST(FormatRunsTest, TableShowsUtcTimes) {
  v1::ListRunsResponse runs;
  v1::RunSummary* r = runs.add_runs();
  r->set_run_id("r-7");
  r->set_state(v1::RUN_STATE_RUNNING);
  r->set_cases(12);
  r->set_ok(11);
  r->set_failed(1);
  r->set_created_unix_ms(1700000000000);
  r->set_label("ci");
  absl::StatusOr<std::string> table = FormatRuns(runs, OutputFormat::kTable);
  ASSERT_TRUE(table.ok());
  EXPECT_THAT(*table, HasSubstr("r-7     RUNNING     12  11       1  2023-11-14 22:13:20  ci"));
}

}  // namespace
}  // namespace colltest::client
