#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/client/sample_health.h"
#include "tests/unit/client/sample_run.h"

namespace colltest::client {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
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
  d->set_uuid("GPU-00112233-4455-6677-8899-aabbccddeeff");
  d->set_pci_bus_id("0000:19:00.0");
  v1::MachineIdentity* machine = devices.mutable_machine();
  machine->set_key("70f239823b92f8b4");
  machine->set_hostname("node-7");
  machine->set_driver_version("13.0");
  machine->set_runtime_version("13.0");
  machine->set_colltest_version("0.1.0");
  machine->set_build_commit("3d57ade303ce");
  v1::Link* link = machine->add_links();
  link->set_a(0);
  link->set_b(1);
  link->set_p2p(true);
  link->set_kind("p2p");

  absl::StatusOr<std::string> table = FormatDevices(devices, OutputFormat::kTable);
  ASSERT_TRUE(table.ok());
  EXPECT_THAT(*table, HasSubstr("variants: lamport, nccl"));
  EXPECT_THAT(*table, HasSubstr("machine node-7 (key 70f239823b92f8b4)  driver 13.0  runtime 13.0  "
                                "colltest 0.1.0 (3d57ade303ce)\n"));
  EXPECT_THAT(*table, MatchesRegex("(.|\n)*0 +NVIDIA H200 +141\\.0 +cuda +"
                                   "GPU-00112233-4455-6677-8899-aabbccddeeff +0000:19:00\\.0\n"));

  absl::StatusOr<std::string> json = FormatDevices(devices, OutputFormat::kJson);
  ASSERT_TRUE(json.ok());
  EXPECT_THAT(*json, HasSubstr("\"variants\": [\n    \"lamport\",\n    \"nccl\"\n  ]"));
  EXPECT_THAT(*json, HasSubstr("\"memory_bytes\": 151397597184"));
  EXPECT_THAT(*json, HasSubstr("\"pci_bus_id\": \"0000:19:00.0\""));
  EXPECT_THAT(*json, HasSubstr("\"hostname\": \"node-7\""));
  EXPECT_THAT(*json, HasSubstr("\"kind\": \"p2p\""));

  // A server without groups (or an older one) still gives scripts the key.
  EXPECT_THAT(*json, HasSubstr("\"groups\": []"));

  EXPECT_FALSE(FormatDevices(devices, OutputFormat::kCsv).ok());
}

TEST(FormatDevicesTest, GroupsFollowTheDevicesInTableAndJson) {
  v1::ListDevicesResponse devices;
  devices.set_backend("cpu");
  v1::Device* d = devices.add_devices();
  d->set_index(0);
  d->set_name("cpu0");
  absl::StatusOr<std::string> without = FormatDevices(devices, OutputFormat::kTable);
  ASSERT_TRUE(without.ok());
  EXPECT_THAT(*without, Not(HasSubstr("group")));

  *devices.mutable_groups() = testing::SampleHealthHang().groups();
  absl::StatusOr<std::string> with = FormatDevices(devices, OutputFormat::kTable);
  ASSERT_TRUE(with.ok());
  std::vector<std::string> lines = Lines(*with);
  ASSERT_EQ(lines.size(), 7u) << *with;
  EXPECT_EQ(lines[4], "");
  EXPECT_THAT(lines[5], MatchesRegex("group +state +recoveries +last recovery ms +message"));
  EXPECT_THAT(lines[6], MatchesRegex("0,1 +RECOVERING +1 +850\\.5 +respawned after a hang; "
                                     "canary pending"));

  absl::StatusOr<std::string> json = FormatDevices(devices, OutputFormat::kJson);
  ASSERT_TRUE(json.ok());
  EXPECT_THAT(*json,
              HasSubstr("\"groups\": [\n    {\n      \"devices\": [\n        0,\n        1\n"
                        "      ],\n      \"state\": \"RECOVERING\",\n      \"message\": "
                        "\"respawned after a hang; canary pending\",\n      \"since_unix_ms\": "
                        "1700000000000,\n      \"recoveries\": 1,\n      "
                        "\"last_recovery_ms\": 850.5,\n      \"respawns\": 0\n    }\n  ]"));
}

TEST(FormatHealthTableTest, OkWithASlowPairWarn) {
  std::vector<std::string> lines = Lines(FormatHealthTable(testing::SampleHealthOk()));
  ASSERT_EQ(lines.size(), 17u);
  // The server's message does not lead with the status here, so the line adds it.
  EXPECT_EQ(lines[0],
            "OK: healthy: 3 ranks, 3 pairs, 2 cases; WARN slow (x median): pair 0-2 at 2.10");
  EXPECT_EQ(lines[1], "");
  EXPECT_THAT(lines[2], MatchesRegex("device +status +latency us +x median +warn +suspect +phase "
                                     "+message"));
  EXPECT_THAT(lines[3], MatchesRegex("0 +OK +12\\.5 +1\\.00"));
  EXPECT_THAT(lines[4], MatchesRegex("1 +OK +12\\.0 +0\\.96"));
  EXPECT_THAT(lines[5], MatchesRegex("2 +OK +13\\.0 +1\\.04"));
  EXPECT_EQ(lines[6], "");
  EXPECT_THAT(lines[7], MatchesRegex("pair +status +latency us +x median +warn +suspect +phase "
                                     "+message"));
  EXPECT_THAT(lines[8], MatchesRegex("0-1 +OK +8\\.0 +1\\.00"));
  EXPECT_THAT(lines[9], MatchesRegex("0-2 +OK +16\\.8 +2\\.10 +WARN"));
  EXPECT_THAT(lines[10], MatchesRegex("1-2 +OK +7\\.9 +0\\.99"));
  EXPECT_EQ(lines[11], "");
  EXPECT_THAT(lines[12], StartsWith("group"));
  EXPECT_THAT(lines[13], MatchesRegex("0,1,2 +SERVING +0 +-"));
  EXPECT_THAT(lines[14], MatchesRegex("0,2 +SERVING +0 +-"));
  EXPECT_EQ(lines[15], "");
  EXPECT_EQ(lines[16], "health: OK in 4.3 s (2 cases)");
}

TEST(FormatHealthTableTest, HangNamesTheRankItsSuspectAndPhase) {
  std::vector<std::string> lines = Lines(FormatHealthTable(testing::SampleHealthHang()));
  ASSERT_EQ(lines.size(), 10u);
  // Already led by the status: not repeated.
  EXPECT_EQ(lines[0], "HANG: rank 1 waited for rank 0 in lamport phase B (lamport eager m=1)");
  // Device 0 is OK with suspect_peer at its proto default 0: no suspect, no WARN.
  EXPECT_THAT(lines[3], MatchesRegex("0 +OK +11\\.0 +1\\.00"));
  // No timing for a hang: dashes; the suspect is device 0, in lamport phase B.
  EXPECT_THAT(lines[4], MatchesRegex("1 +HANG +- +- +0 +lamport phase B +timed out after 5000 ms"));
  const size_t suspect_column = lines[2].find("suspect");
  ASSERT_NE(suspect_column, std::string::npos);
  EXPECT_EQ(lines[4][suspect_column + std::string("suspect").size() - 1], '0');
  EXPECT_THAT(lines[7], MatchesRegex("0,1 +RECOVERING +1 +850\\.5 +respawned after a hang; "
                                     "canary pending"));
  EXPECT_EQ(lines[9], "health: HANG in 5.2 s (1 case)");
}

TEST(FormatHealthTableTest, ErrorWithoutTargetsShowsNoEmptyTables) {
  std::vector<std::string> lines = Lines(FormatHealthTable(testing::SampleHealthError()));
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0], "ERROR: workers for devices 0,1 failed to start (lamport eager m=1)");
  EXPECT_EQ(lines[1], "");
  EXPECT_THAT(lines[2], StartsWith("group"));
  EXPECT_THAT(lines[3], MatchesRegex("0,1 +DEGRADED +0 +- +respawn failed"));
  EXPECT_EQ(lines[5], "health: ERROR in 0.1 s (0 cases)");
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
  r->set_owner("ci-bot");
  absl::StatusOr<std::string> table = FormatRuns(runs, OutputFormat::kTable);
  ASSERT_TRUE(table.ok());
  EXPECT_THAT(*table, HasSubstr("r-7     2023-11-14T22:13:20Z  RUNNING     12  11       1  ci     "
                                "ci-bot"));
  absl::StatusOr<std::string> json = FormatRuns(runs, OutputFormat::kJson);
  ASSERT_TRUE(json.ok());
  EXPECT_THAT(*json, HasSubstr("\"owner\": \"ci-bot\""));
}

// A label is another client's text: escape sequences and newlines must not reach the terminal.
TEST(FormatRunsTest, TableEscapesControlCharactersOfLabels) {
  v1::ListRunsResponse runs;
  v1::RunSummary* r = runs.add_runs();
  r->set_run_id("r-8");
  r->set_label("\x1b[2Jgone\nforged row \\ \xff");
  absl::StatusOr<std::string> table = FormatRuns(runs, OutputFormat::kTable);
  ASSERT_TRUE(table.ok());
  EXPECT_THAT(*table, HasSubstr("\\x1b[2Jgone\\x0aforged row \\\\ \\xff"));
  EXPECT_EQ(table->find('\x1b'), std::string::npos);
  EXPECT_EQ(std::count(table->begin(), table->end(), '\n'), 2);  // header and one row
}

}  // namespace
}  // namespace colltest::client
