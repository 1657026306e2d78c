#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "client/format/format.h"
#include "client/format/format_groups.h"
#include "client/format/text_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
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

TEST(FormatRunTableTest, HeaderRowsSummaryAndFooter) {
  std::vector<std::string> lines = Lines(FormatRunTable(testing::SampleRun()));
  ASSERT_EQ(lines.size(), 9u) << ::testing::PrintToString(lines);
  // World and pattern are the same for every case: said once, no column. The dtype is not.
  EXPECT_EQ(lines[0], "run r-42  backend cpu  state DONE  world 2  pattern normal");
  EXPECT_THAT(lines[1], MatchesRegex(" *m +n +bytes +variant +mode +dtype +median +algbw +busbw "
                                     "+mismatches +max +status +message"));
  EXPECT_THAT(lines[2], MatchesRegex(" +\\(us\\) +\\(GB/s\\) +\\(GB/s\\) +ulp"));
  // 64 x 7168 x 2 bytes = 896 KiB.
  EXPECT_THAT(lines[3], MatchesRegex("64 +7168 +896K +lamport +eager +bf16 +12\\.3 +37\\.50 "
                                     "+37\\.50 +0 +1 +OK"));
  // The rest of a line of 120 columns goes to the message, cut where it is longer.
  EXPECT_THAT(lines[4], MatchesRegex(" 8 +7168 +112K +auto\\(lamport_tb\\) +graph +fp16 +20\\.0 +- "
                                     "+- +3 +64 +WRONG +3 mismatches,\\.\\.\\."));
  // No timing and no check for a hang: dashes, not zeros that read as fast and correct.
  EXPECT_THAT(lines[5], MatchesRegex(" 1 +7168 +14K +one_stage +eager +bf16 +- +- +- +- +- +HANG "
                                     "+rank 1 waited\\.\\.\\."));
  EXPECT_THAT(lines[6], MatchesRegex(" 1 .* +UNSUPPORTED +nccl: not buil\\.\\.\\."));
  EXPECT_EQ(lines[6].size(), 120u);
  EXPECT_EQ(lines[7], "4 cases: 1 OK, 1 WRONG, 1 HANG, 1 UNSUPPORTED");
  EXPECT_EQ(lines[8], "# avg bus bandwidth: 37.50 GB/s over 1 OK case");
}

// Ranks that shared a GPU crossed no link: a note before the figures, starred bandwidth titles
// and a caveat on the average.
TEST(FormatRunTableTest, SharedGpuRunSaysItsTimesAreNoLinkMeasurement) {
  v1::RunResult run = testing::SampleRun();
  run.set_ranks_per_gpu(4);
  std::vector<std::string> lines = Lines(FormatRunTable(run));
  ASSERT_EQ(lines.size(), 10u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[1],
            "* ranks share a GPU (4 per GPU): times are kernel overhead, not a link measurement; "
            "busbw is not a link figure");
  EXPECT_THAT(lines[2], MatchesRegex(".* +algbw\\* +busbw\\* +mismatches .*"));
  EXPECT_EQ(
      lines[9],
      "# avg bus bandwidth: 37.50 GB/s over 1 OK case (ranks share a GPU: not a link figure)");

  run.set_time_sliced(true);
  lines = Lines(FormatRunTable(run));
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_EQ(lines[1],
            "* ranks share a time-sliced GPU (4 per GPU): timings are meaningless (time-sliced), "
            "not a link measurement; busbw is not a link figure");
  EXPECT_THAT(lines[9], ::testing::EndsWith(" (ranks share a time-sliced GPU: meaningless)"));
}

// One rank per GPU, whether said (1) or from a record older than the field (0): no note.
TEST(FormatRunTableTest, RunOnSeparateGpusHasNoSharedGpuNote) {
  v1::RunResult run = testing::SampleRun();
  for (uint32_t ranks_per_gpu : {0u, 1u}) {
    run.set_ranks_per_gpu(ranks_per_gpu);
    const std::string table = FormatRunTable(run);
    EXPECT_THAT(table, Not(HasSubstr("share a GPU")));
    EXPECT_THAT(table, Not(HasSubstr("busbw*")));
  }
}

TEST(FormatRunTableTest, ColumnsAreAligned) {
  std::vector<std::string> lines = Lines(FormatRunTable(testing::SampleRun()));
  ASSERT_GE(lines.size(), 7u);
  const size_t status_column = lines[1].find("status");
  ASSERT_NE(status_column, std::string::npos);
  for (size_t i = 3; i <= 6; ++i) {
    ASSERT_GT(lines[i].size(), status_column) << lines[i];
    EXPECT_EQ(lines[i][status_column - 1], ' ') << lines[i];
    EXPECT_NE(lines[i][status_column], ' ') << lines[i];
  }
  // Right-aligned figures end under their titles, units included.
  const size_t busbw_end = lines[1].find("busbw") + 5;
  EXPECT_EQ(lines[2].substr(busbw_end - 6, 6), "(GB/s)");
  EXPECT_EQ(lines[3].substr(busbw_end - 5, 5), "37.50");
}

// Every variant, auto among them, long messages (one not ASCII) and wide figures.
v1::RunResult CrowdedRun() {
  v1::RunResult run = testing::SampleRun();
  run.clear_cases();
  const std::string long_message =
      "rank 3 waited for rank 0 in lamport phase B after 5000 ms; the peer's flag never flipped, "
      "which points at the link between devices 0 and 3 rather than at rank 3 itself";
  int index = 0;
  for (v1::Variant variant : {v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL, v1::VARIANT_LAMPORT,
                              v1::VARIANT_LAMPORT_TB, v1::VARIANT_NCCL, v1::VARIANT_AUTO}) {
    for (v1::CaseStatus status : {v1::CASE_STATUS_OK, v1::CASE_STATUS_UNSUPPORTED}) {
      v1::CaseResult c = testing::MakeCase(variant, status);
      c.set_index(index++);
      c.set_world_size(index % 2 == 0 ? 8 : 4);  // a W column too
      c.set_m(1048576);
      c.set_n(16384);
      if (variant == v1::VARIANT_AUTO) c.set_resolved_variant(v1::VARIANT_TWO_KERNEL);
      c.mutable_timing()->set_median_us(123456.7);
      c.set_algbw_gbps(1234.56);
      c.set_busbw_gbps(2160.48);
      c.mutable_diff()->set_mismatches(12345678);
      c.mutable_diff()->set_max_ulp(65535);
      c.set_message(index == 3 ? "défaut: " + long_message : long_message);
      *run.add_cases() = c;
    }
  }
  return run;
}

TEST(FormatRunTableTest, FitsIn120ColumnsCuttingTheMessage) {
  const v1::RunResult run = CrowdedRun();
  const std::vector<std::string> lines = Lines(FormatRunTable(run));
  ASSERT_EQ(lines.size(), 3u + 12u + 2u);
  for (const std::string& line : lines) EXPECT_LE(DisplayWidth(line), 120u) << line;
  EXPECT_THAT(lines[1], Not(HasSubstr("p10")));
  EXPECT_THAT(lines[1], HasSubstr(" W "));
  EXPECT_THAT(lines[3], MatchesRegex(".* OK +rank 3\\.\\.\\."));
  EXPECT_THAT(lines[13], HasSubstr("auto(two_kernel)"));
  // Widths count code points: the row with an accent is as wide as the others, and cut between
  // whole characters.
  EXPECT_THAT(lines[5], HasSubstr("  défaut..."));
  for (size_t i = 3; i < 15; ++i) EXPECT_EQ(DisplayWidth(lines[i]), 120u) << lines[i];
}

TEST(FormatRunTableTest, WideShowsEveryColumnInFull) {
  const v1::RunResult run = CrowdedRun();
  const std::string table = FormatRunTable(run, TableWidth::kWide);
  const std::vector<std::string> lines = Lines(table);
  EXPECT_EQ(lines[0], "run r-42  backend cpu  state DONE");
  EXPECT_THAT(lines[1], MatchesRegex(" *m +n +bytes +variant +mode +W +dtype +pattern +median +p10 "
                                     "+p90 +algbw +busbw +mismatches +max +status +message"));
  EXPECT_THAT(lines[2],
              MatchesRegex(" +\\(us\\) +\\(us\\) +\\(us\\) +\\(GB/s\\) +\\(GB/s\\) +ulp"));
  // Exact bytes: 1048576 x 16384 x 2.
  EXPECT_THAT(lines[3], HasSubstr(" 34359738368 "));
  EXPECT_THAT(table, HasSubstr(run.cases(0).message() + "\n"));
  EXPECT_GT(DisplayWidth(lines[3]), 120u);

  v1::RunResult timed = testing::SampleRun();
  EXPECT_THAT(Lines(FormatRunTable(timed, TableWidth::kWide))[3],
              MatchesRegex("64 +7168 +917504 +lamport +eager +2 +bf16 +normal +12\\.3 +11\\.5 "
                           "+14\\.2 +37\\.50 +37\\.50 +0 +1 +OK"));
}

TEST(FormatRunTableTest, BandwidthHasTwoDecimalsAndBytesAreCompact) {
  v1::RunResult run = testing::SampleRun();
  run.clear_cases();
  const std::vector<std::pair<uint32_t, uint32_t>> shapes = {
      {1, 448}, {1, 256 * 1024}, {1024, 7168}, {3, 256}, {1, 1023 * 512 + 1}};
  for (const auto& [m, n] : shapes) {
    v1::CaseResult c = testing::MakeCase(v1::VARIANT_LAMPORT, v1::CASE_STATUS_OK);
    c.set_m(m);
    c.set_n(n);
    c.mutable_timing()->set_median_us(300);
    c.set_algbw_gbps(0.034);
    c.set_busbw_gbps(0.026);
    *run.add_cases() = c;
  }
  const std::vector<std::string> lines = Lines(FormatRunTable(run));
  ASSERT_EQ(lines.size(), 3u + shapes.size() + 2u);
  // A cpu backend's 0.03 GB/s is not 0.0.
  EXPECT_THAT(lines[3], MatchesRegex(".* 300\\.0 +0\\.03 +0\\.03 +0 +0 +OK"));
  EXPECT_THAT(lines[3], MatchesRegex(" *1 +448 +896 +lamport .*"));  // under 1 KiB: exact
  EXPECT_THAT(lines[4], MatchesRegex(" *1 +262144 +512K .*"));       // whole KiB
  EXPECT_THAT(lines[5], MatchesRegex(" *1024 +7168 +14M .*"));       // whole MiB
  EXPECT_THAT(lines[6], MatchesRegex(" *3 +256 +1\\.5K .*"));        // 1536 bytes
  EXPECT_THAT(lines[7], MatchesRegex(" *1 +523777 +1023\\.0K .*"));  // 1047554 bytes
}

TEST(FormatRunTableTest, FooterAveragesBusBandwidthOfOkCases) {
  v1::RunResult run = testing::SampleRun();
  run.clear_cases();
  const std::vector<std::pair<v1::CaseStatus, double>> cases = {
      {v1::CASE_STATUS_OK, 10},    {v1::CASE_STATUS_OK, 20}, {v1::CASE_STATUS_OK, 40.01},
      {v1::CASE_STATUS_WRONG, 99}, {v1::CASE_STATUS_OK, 0},  // WRONG and untimed: not counted
  };
  for (const auto& [status, busbw] : cases) {
    v1::CaseResult c = testing::MakeCase(v1::VARIANT_LAMPORT, status);
    c.set_busbw_gbps(busbw);
    *run.add_cases() = c;
  }
  EXPECT_EQ(Lines(FormatRunTable(run)).back(), "# avg bus bandwidth: 23.34 GB/s over 3 OK cases");
  run.clear_cases();
  *run.add_cases() = testing::MakeCase(v1::VARIANT_NCCL, v1::CASE_STATUS_UNSUPPORTED);
  EXPECT_EQ(Lines(FormatRunTable(run)).back(),
            "# avg bus bandwidth: - (no OK case with a bus bandwidth)");
}

// colltestd words a finished run's message as the counts the table ends with.
TEST(FormatRunTableTest, SummaryLineOnce) {
  v1::RunResult run = testing::SampleRun();
  run.set_message("4 cases: 1 OK, 1 WRONG, 1 HANG, 1 UNSUPPORTED");
  for (TableWidth width : {TableWidth::kFit, TableWidth::kWide}) {
    const std::string table = FormatRunTable(run, width);
    const size_t first = table.find("4 cases:");
    ASSERT_NE(first, std::string::npos) << table;
    EXPECT_EQ(table.find("4 cases:", first + 1), std::string::npos) << table;
  }
  run.set_message("cancelled by user");
  EXPECT_EQ(Lines(FormatRunTable(run))[1], "cancelled by user");
}

TEST(TextTableTest, CutsByCodePointsAndTakesTwoLineTitles) {
  EXPECT_EQ(DisplayWidth("défaut"), 6u);
  EXPECT_EQ(CutToWidth("défaut de lien", 8), "défau...");
  EXPECT_EQ(CutToWidth("ab cdef", 6), "ab...");
  EXPECT_EQ(CutToWidth("short", 5), "short");
  EXPECT_EQ(CutToWidth("abcdef", 2), "..");
  TextTable table({{"a", TextTable::Align::kRight},
                   {"time\n(us)", TextTable::Align::kRight},
                   {"note", TextTable::Align::kLeft}});
  table.AddRow({"1", "12.5", "a long note that is cut"});
  table.FitTo(20, 2, 4);
  EXPECT_EQ(table.Render(), "a  time  note\n   (us)\n1  12.5  a long n...\n");
  table.FitTo(10, 2, 4);  // the note keeps its minimum
  EXPECT_EQ(table.Render(), "a  time  note\n   (us)\n1  12.5  a...\n");
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

TEST(FormatDevicesTest, SerialAndTopologyMatrix) {
  v1::ListDevicesResponse devices;
  devices.set_backend("cuda");
  *devices.mutable_machine() = testing::SampleMachine();
  *devices.mutable_devices() = devices.machine().devices();
  absl::StatusOr<std::string> table = FormatDevices(devices, OutputFormat::kTable);
  ASSERT_TRUE(table.ok());
  std::vector<std::string> lines = Lines(*table);
  ASSERT_EQ(lines.size(), 11u) << *table;
  EXPECT_THAT(lines[3], MatchesRegex("index +name +memory GiB +backend +uuid +pci bus id +serial"));
  EXPECT_THAT(lines[4], MatchesRegex(" *0 +NVIDIA H200 +141\\.0 +cuda +GPU-8d1f0000-0000-0000-0000-"
                                     "000000000000 +0000:19:00\\.0 +1654922012345"));
  // No serial from the driver: an empty cell, not a made-up one.
  EXPECT_THAT(lines[5], MatchesRegex(".*0000:3b:00\\.0"));
  EXPECT_EQ(lines[6], "");
  EXPECT_THAT(lines[7], StartsWith("links: NV<n> n NVLinks"));
  EXPECT_EQ(lines[8], "device  0     1");
  EXPECT_EQ(lines[9], "0       X     NV18");
  EXPECT_EQ(lines[10], "1       NV18  X");

  absl::StatusOr<std::string> json = FormatDevices(devices, OutputFormat::kJson);
  ASSERT_TRUE(json.ok());
  const nlohmann::json parsed = nlohmann::json::parse(*json);
  EXPECT_EQ(parsed["devices"][0]["serial"], "1654922012345");
  EXPECT_EQ(parsed["devices"][1]["serial"], "");
  EXPECT_EQ(parsed["machine"]["hostname"], "node-7");
  EXPECT_EQ(parsed["machine"]["links"][0]["kind"], "nvlink");
  EXPECT_EQ(parsed["machine"]["links"][0]["lanes"], 18);
  EXPECT_EQ(parsed["machine"]["links"][0]["hops"], 1);
}

// colltestd --ranks-per-gpu 2: each GPU is listed once per slot, with the GPU and the slot.
TEST(FormatDevicesTest, SlotsOfSharedGpusNameTheirGpuAndSlot) {
  v1::ListDevicesResponse devices;
  devices.set_backend("cuda");
  *devices.mutable_machine() = testing::SampleMachine();
  devices.mutable_machine()->set_ranks_per_gpu(2);
  for (uint32_t slot = 0; slot < 2; ++slot) {
    for (uint32_t gpu = 0; gpu < 2; ++gpu) {
      v1::Device d = testing::SampleMachine().devices(gpu);
      d.set_index(slot * 2 + gpu);
      d.set_physical_index(gpu);
      d.set_slot(slot);
      *devices.add_devices() = d;
    }
  }
  v1::Link* same = devices.mutable_machine()->add_links();
  same->set_a(0);
  same->set_b(2);
  same->set_p2p(true);
  same->set_kind("same_gpu");
  *devices.mutable_machine()->mutable_devices() = devices.devices();

  absl::StatusOr<std::string> table = FormatDevices(devices, OutputFormat::kTable);
  ASSERT_TRUE(table.ok());
  std::vector<std::string> lines = Lines(*table);
  ASSERT_GE(lines.size(), 9u) << *table;
  EXPECT_THAT(lines[3], MatchesRegex("index +gpu +slot +name +memory GiB .*"));
  EXPECT_THAT(lines[6], MatchesRegex(" *2 +0 +1 +NVIDIA H200 .*GPU-8d1f0000-.*"));
  EXPECT_THAT(lines[7], MatchesRegex(" *3 +1 +1 +NVIDIA H200 .*GPU-8d1f1111-.*"));
  EXPECT_THAT(lines[8], StartsWith("ranks per GPU: 2 (each GPU is listed once per slot; ranks on "
                                   "slots of one GPU share it and measure kernel overhead, not a "
                                   "link)"));
  EXPECT_THAT(*table, HasSubstr(", SAME_GPU two slots of one GPU (no link)\n"));
  EXPECT_THAT(*table, MatchesRegex("(.|\n)*\n0 +X +NV18 +SAME_GPU +\\?\n(.|\n)*"));

  absl::StatusOr<std::string> json = FormatDevices(devices, OutputFormat::kJson);
  ASSERT_TRUE(json.ok());
  const nlohmann::json parsed = nlohmann::json::parse(*json);
  EXPECT_EQ(parsed["devices"][3]["physical_index"], 1);
  EXPECT_EQ(parsed["devices"][3]["slot"], 1);
  EXPECT_EQ(parsed["machine"]["ranks_per_gpu"], 2);
  EXPECT_EQ(parsed["machine"]["devices"][2]["physical_index"], 0);
  EXPECT_EQ(parsed["machine"]["devices"][2]["slot"], 1);
  EXPECT_EQ(parsed["machine"]["links"][1]["kind"], "same_gpu");
}

// One device per GPU: no gpu and slot columns; an older server's 0 reads as the device's index.
TEST(FormatDevicesTest, OneDevicePerGpuHasNoSlotColumns) {
  v1::ListDevicesResponse devices;
  devices.set_backend("cuda");
  *devices.mutable_machine() = testing::SampleMachine();
  *devices.mutable_devices() = devices.machine().devices();
  absl::StatusOr<std::string> table = FormatDevices(devices, OutputFormat::kTable);
  ASSERT_TRUE(table.ok());
  EXPECT_THAT(*table, Not(HasSubstr("slot")));
  EXPECT_THAT(*table, Not(HasSubstr("ranks per GPU")));
  const nlohmann::json parsed = nlohmann::json::parse(*FormatDevices(devices, OutputFormat::kJson));
  EXPECT_EQ(parsed["devices"][1]["physical_index"], 1);
  EXPECT_EQ(parsed["devices"][1]["slot"], 0);
  EXPECT_EQ(parsed["machine"]["ranks_per_gpu"], 1);
}

TEST(FormatDevicesTest, TopologyCellsByLinkKind) {
  v1::MachineIdentity machine;
  for (uint32_t i = 0; i < 4; ++i) machine.add_devices()->set_index(i);
  auto link = [&](uint32_t a, uint32_t b, const char* kind, bool p2p, uint32_t lanes) {
    v1::Link* l = machine.add_links();
    l->set_a(a);
    l->set_b(b);
    l->set_kind(kind);
    l->set_p2p(p2p);
    l->set_lanes(lanes);
  };
  link(0, 1, "nvlink", true, 0);  // NVLink, lanes not counted
  link(0, 2, "xgmi", true, 0);
  link(0, 3, "pcie", true, 0);
  link(1, 2, "p2p", true, 0);
  link(1, 3, "none", false, 0);
  link(2, 3, "", true, 0);  // an older server: peer access, no kind
  std::vector<std::string> lines = Lines(TopologyTable(machine));
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_THAT(lines[2], MatchesRegex("0 +X +NVL +XGMI +PCIE"));
  EXPECT_THAT(lines[3], MatchesRegex("1 +NVL +X +P2P +-"));
  EXPECT_THAT(lines[4], MatchesRegex("2 +XGMI +P2P +X +P2P"));
  EXPECT_THAT(lines[5], MatchesRegex("3 +PCIE +- +P2P +X"));

  v1::Link shm;
  shm.set_kind("shm");
  EXPECT_EQ(LinkCell(shm), "SHM");
  // A pair the server reported nothing for is unknown, not "no link".
  machine.mutable_links()->DeleteSubrange(5, 1);
  EXPECT_THAT(Lines(TopologyTable(machine))[4], MatchesRegex("2 +XGMI +P2P +X +\\?"));
  // One device has nothing to link.
  machine.mutable_devices()->DeleteSubrange(1, 3);
  EXPECT_EQ(TopologyTable(machine), "");
}

TEST(FormatHealthTableTest, OkWithASlowPairWarn) {
  std::vector<std::string> lines = Lines(FormatHealthTable(testing::SampleHealthOk()));
  ASSERT_EQ(lines.size(), 18u);
  // The server's message does not lead with the status here, so the line adds it.
  EXPECT_EQ(lines[0],
            "OK: healthy: 3 ranks, 3 pairs, 2 cases; WARN slow (x median): pair 0-2 at 2.10");
  // An older server's answer: the default level, no self test, no machine.
  EXPECT_EQ(lines[1], "level quick");
  EXPECT_EQ(lines[2], "");
  EXPECT_THAT(lines[3], MatchesRegex("device +status +latency us +x median +warn +suspect +phase "
                                     "+message"));
  EXPECT_THAT(lines[4], MatchesRegex("0 +OK +12\\.5 +1\\.00"));
  EXPECT_THAT(lines[5], MatchesRegex("1 +OK +12\\.0 +0\\.96"));
  EXPECT_THAT(lines[6], MatchesRegex("2 +OK +13\\.0 +1\\.04"));
  EXPECT_EQ(lines[7], "");
  EXPECT_THAT(lines[8], MatchesRegex("pair +status +latency us +x median +warn +suspect +phase "
                                     "+message"));
  EXPECT_THAT(lines[9], MatchesRegex("0-1 +OK +8\\.0 +1\\.00"));
  EXPECT_THAT(lines[10], MatchesRegex("0-2 +OK +16\\.8 +2\\.10 +WARN slow"));
  EXPECT_THAT(lines[11], MatchesRegex("1-2 +OK +7\\.9 +0\\.99"));
  EXPECT_EQ(lines[12], "");
  EXPECT_THAT(lines[13], StartsWith("group"));
  EXPECT_THAT(lines[14], MatchesRegex("0,1,2 +SERVING +0 +-"));
  EXPECT_THAT(lines[15], MatchesRegex("0,2 +SERVING +0 +-"));
  EXPECT_EQ(lines[16], "");
  EXPECT_EQ(lines[17], "health: OK in 4.3 s (2 cases)");
}

TEST(FormatHealthTableTest, HangNamesTheRankItsSuspectAndPhase) {
  std::vector<std::string> lines = Lines(FormatHealthTable(testing::SampleHealthHang()));
  ASSERT_EQ(lines.size(), 12u);
  // Already led by the status: not repeated.
  EXPECT_EQ(lines[0], "HANG: rank 1 waited for rank 0 in lamport phase B (lamport eager m=1)");
  EXPECT_EQ(lines[1], "level quick");
  EXPECT_EQ(lines[2],
            "machine node-7 (key 70f239823b92f8b4)  driver 580.159.04 (CUDA 13.0)  runtime 13.0  "
            "colltest 0.1.0 (3d57ade303ce)");
  // Device 0 is OK with suspect_peer at its proto default 0: no suspect, no WARN.
  EXPECT_THAT(lines[5], MatchesRegex("0 +OK +11\\.0 +1\\.00"));
  // No timing for a hang: dashes; the suspect is device 0, in lamport phase B.
  EXPECT_THAT(lines[6], MatchesRegex("1 +HANG +- +- +0 +lamport phase B +timed out after 5000 ms"));
  const size_t suspect_column = lines[4].find("suspect");
  ASSERT_NE(suspect_column, std::string::npos);
  EXPECT_EQ(lines[6][suspect_column + std::string("suspect").size() - 1], '0');
  EXPECT_THAT(lines[9], MatchesRegex("0,1 +RECOVERING +1 +850\\.5 +respawned after a hang; "
                                     "canary pending"));
  EXPECT_EQ(lines[11], "health: HANG in 5.2 s (1 case)");
}

TEST(FormatHealthTableTest, ErrorWithoutTargetsShowsNoEmptyTables) {
  std::vector<std::string> lines = Lines(FormatHealthTable(testing::SampleHealthError()));
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[0], "ERROR: workers for devices 0,1 failed to start (lamport eager m=1)");
  EXPECT_EQ(lines[1], "level quick");
  EXPECT_EQ(lines[2], "");
  EXPECT_THAT(lines[3], StartsWith("group"));
  EXPECT_THAT(lines[4], MatchesRegex("0,1 +DEGRADED +0 +- +respawn failed"));
  EXPECT_EQ(lines[6], "health: ERROR in 0.1 s (0 cases)");
}

const absl::Time kVerdict = absl::FromUnixMillis(1700000000000);

TEST(FormatHealthTableTest, LongLevelShowsSelfTestAndBandwidthAgainstExpected) {
  std::vector<std::string> lines =
      Lines(FormatHealthTableAt(testing::SampleHealthLong(), kVerdict + absl::Seconds(70)));
  ASSERT_EQ(lines.size(), 13u) << ::testing::PrintToString(lines);
  // A fresh verdict: no age.
  EXPECT_EQ(lines[1], "level long");
  EXPECT_EQ(lines[2], "self test: PASSED (hang_end_sync:1): HANG found naming rank 1");
  EXPECT_THAT(lines[3], StartsWith("machine node-7 (key 70f239823b92f8b4)"));
  // Ranks have no bandwidth: no columns of dashes.
  EXPECT_THAT(lines[5], Not(HasSubstr("busbw")));
  EXPECT_THAT(lines[9], MatchesRegex("pair +status +latency us +x median +busbw GB/s "
                                     "+expected GB/s +warn +suspect +phase +message"));
  EXPECT_THAT(lines[10], MatchesRegex("0-1 +OK +8\\.0 +1\\.00 +180\\.0 +350\\.0 +WARN busbw"));
  EXPECT_EQ(lines[12], "health: OK in 61.5 s (1 case)");
}

TEST(FormatHealthTableTest, SelfTestFailedOrNotRunSaysSo) {
  v1::HealthResponse failed = testing::SampleHealthLong();
  failed.mutable_self_test()->set_passed(false);
  failed.mutable_self_test()->set_message("no HANG: the planted fault went unnoticed");
  EXPECT_EQ(Lines(FormatHealthTable(failed))[2],
            "self test: FAILED (hang_end_sync:1): no HANG: the planted fault went unnoticed");
  v1::HealthResponse not_run = testing::SampleHealthLong();
  not_run.clear_self_test();
  not_run.mutable_self_test()->set_message("fault injection is not allowed on this server");
  EXPECT_EQ(Lines(FormatHealthTable(not_run))[2],
            "self test: not run: fault injection is not allowed on this server");
}

TEST(FormatHealthTableTest, CachedVerdictSaysHowOld) {
  v1::HealthResponse health = testing::SampleHealthLong();
  health.set_cached(true);
  std::vector<std::string> lines =
      Lines(FormatHealthTableAt(health, kVerdict + absl::Milliseconds(42900)));
  EXPECT_EQ(lines[0], "OK: healthy: 2 ranks, 1 pair; WARN below expected bus bandwidth: pair 0-1");
  EXPECT_EQ(lines[1], "level long, cached, verdict 42s old");
  EXPECT_EQ(lines.back(), "health: OK in 61.5 s (1 case), cached, 42s old");
  // No verdict time from the server: no age, rather than one counted from 1970.
  health.clear_verdict_unix_ms();
  lines = Lines(FormatHealthTableAt(health, kVerdict));
  EXPECT_EQ(lines[1], "level long, cached");
  EXPECT_EQ(lines.back(), "health: OK in 61.5 s (1 case), cached");
}

// A process name is another user's text: it must not reach the terminal raw.
TEST(FormatHealthTableTest, BusyReasonIsEscaped) {
  v1::HealthResponse health;
  health.set_busy(true);
  health.set_busy_reason("in use by pid 7 (\x1b[2Jevil)");
  const std::string table = FormatHealthTable(health);
  EXPECT_THAT(table, StartsWith("BUSY: in use by pid 7 (\\x1b[2Jevil)\n"));
  EXPECT_EQ(table.find('\x1b'), std::string::npos);
}

// The news of a BUSY answer is that nothing ran; the verdict it carries is an older one.
TEST(FormatHealthTableTest, BusyLeadsWithItsReasonThenTheEarlierVerdict) {
  std::vector<std::string> lines =
      Lines(FormatHealthTableAt(testing::SampleHealthBusy(), kVerdict + absl::Seconds(312)));
  EXPECT_EQ(lines[0], "BUSY: devices 0,1 in use by pid 4242 (python3)");
  EXPECT_EQ(lines[1],
            "last verdict: HANG: rank 1 waited for rank 0 in lamport phase B (lamport eager m=1)");
  EXPECT_EQ(lines[2], "level quick, verdict 5m12s old");
  EXPECT_EQ(lines.back(), "health: BUSY, nothing checked (last verdict HANG)");

  v1::HealthResponse none;
  none.set_busy(true);
  none.set_busy_reason("3 runs of other clients ahead");
  EXPECT_EQ(FormatHealthTableAt(none, kVerdict),
            "BUSY: 3 runs of other clients ahead\nno earlier verdict on these devices\n"
            "level quick\n\nhealth: BUSY, nothing checked\n");
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
