#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/format/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/unit/client/sample_health.h"
#include "tests/unit/client/sample_run.h"

namespace colltest::client {
namespace {

using ::testing::ElementsAre;
using Json = nlohmann::json;

Json Parse(const v1::RunResult& run) { return Json::parse(FormatRunJson(run)); }

TEST(FormatRunJsonTest, TopLevelObject) {
  Json json = Parse(testing::SampleRun());
  EXPECT_EQ(json["run_id"], "r-42");
  EXPECT_EQ(json["backend"], "cpu");
  EXPECT_EQ(json["state"], "DONE");
  EXPECT_EQ(json["label"], "nightly");
  ASSERT_TRUE(json["cases"].is_array());
  EXPECT_EQ(json["cases"].size(), 4u);
}

// Where the ranks were placed travels with the result: 4 ranks on one GPU time kernel overhead.
TEST(FormatRunJsonTest, RunSaysWhetherItsRanksSharedAGpu) {
  v1::RunResult run = testing::SampleRun();
  Json json = Parse(run);
  EXPECT_EQ(json["ranks_per_gpu"], 1);  // 0 from a record older than the field
  EXPECT_EQ(json["time_sliced"], false);
  EXPECT_EQ(json["machine"]["ranks_per_gpu"], 1);
  EXPECT_EQ(json["machine"]["devices"][1]["physical_index"], 1);
  EXPECT_EQ(json["machine"]["devices"][1]["slot"], 0);
  run.set_ranks_per_gpu(4);
  run.set_time_sliced(true);
  run.mutable_machine()->set_ranks_per_gpu(4);
  json = Parse(run);
  EXPECT_EQ(json["ranks_per_gpu"], 4);
  EXPECT_EQ(json["time_sliced"], true);
  EXPECT_EQ(json["machine"]["ranks_per_gpu"], 4);
}

// A result read far from the node (CI, the history) must still name the host and the boards.
TEST(FormatRunJsonTest, MachineNamesTheHostAndEveryDevice) {
  Json machine = Parse(testing::SampleRun())["machine"];
  EXPECT_EQ(machine["hostname"], "node-7");
  EXPECT_EQ(machine["key"], "70f239823b92f8b4");
  EXPECT_EQ(machine["driver_version"], "580.159.04 (CUDA 13.0)");
  ASSERT_EQ(machine["devices"].size(), 2u);
  EXPECT_EQ(machine["devices"][0], Json({{"index", 0},
                                         {"name", "NVIDIA H200"},
                                         {"uuid", "GPU-8d1f0000-0000-0000-0000-000000000000"},
                                         {"pci_bus_id", "0000:19:00.0"},
                                         {"serial", "1654922012345"},
                                         {"physical_index", 0},
                                         {"slot", 0}}));
  EXPECT_EQ(machine["devices"][1]["uuid"], "GPU-8d1f1111-1111-1111-1111-111111111111");
  EXPECT_EQ(machine["devices"][1]["pci_bus_id"], "0000:3b:00.0");
  // Kept when the driver gave none, so that scripts can read the key unconditionally.
  EXPECT_EQ(machine["devices"][1]["serial"], "");
}

TEST(FormatRunJsonTest, MachineLinksCarryKindHopsAndLanes) {
  Json links = Parse(testing::SampleRun())["machine"]["links"];
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0], Json({{"a", 0},
                            {"b", 1},
                            {"kind", "nvlink"},
                            {"hops", 1},
                            {"lanes", 18},
                            {"p2p", true},
                            {"performance_rank", 0},
                            {"native_atomics", true}}));
}

TEST(FormatRunJsonTest, RunWithoutMachineStillHasTheKey) {
  Json machine = Parse(v1::RunResult())["machine"];
  EXPECT_EQ(machine["hostname"], "");
  EXPECT_TRUE(machine["devices"].is_array());
  EXPECT_TRUE(machine["links"].is_array());
}

TEST(FormatRunJsonTest, CaseCarriesEveryContractField) {
  Json c = Parse(testing::SampleRun())["cases"][0];
  // docs/design.md section 10: the fields every case carries at least.
  for (const char* field :
       {"variant", "mode", "world", "m", "n", "dtype", "pattern", "status", "message", "median_us",
        "p10_us", "p90_us", "busbw_gbps", "mismatches", "max_abs_err", "max_ulp", "ranks"}) {
    EXPECT_TRUE(c.contains(field)) << field;
  }
  EXPECT_EQ(c["variant"], "lamport");
  EXPECT_EQ(c["mode"], "eager");
  EXPECT_EQ(c["world"], 2);
  EXPECT_EQ(c["m"], 64);
  EXPECT_EQ(c["n"], 7168);
  EXPECT_EQ(c["dtype"], "bf16");
  EXPECT_EQ(c["pattern"], "normal");
  EXPECT_EQ(c["status"], "OK");
  EXPECT_EQ(c["message"], "");
  EXPECT_DOUBLE_EQ(c["median_us"].get<double>(), 12.3);
  EXPECT_DOUBLE_EQ(c["p10_us"].get<double>(), 11.5);
  EXPECT_DOUBLE_EQ(c["p90_us"].get<double>(), 14.25);
  EXPECT_DOUBLE_EQ(c["busbw_gbps"].get<double>(), 37.5);
  EXPECT_EQ(c["mismatches"], 0);
  EXPECT_DOUBLE_EQ(c["max_abs_err"].get<double>(), 0.0078125);
  EXPECT_EQ(c["max_ulp"], 1);
  EXPECT_TRUE(c["median_us"].is_number());
  EXPECT_TRUE(c["mismatches"].is_number_integer());
}

TEST(FormatRunJsonTest, RanksRepeatTheCaseFieldsPlusRankSuspectPeerAndPhase) {
  Json ranks = Parse(testing::SampleRun())["cases"][0]["ranks"];
  ASSERT_EQ(ranks.size(), 2u);
  for (const char* field : {"rank", "suspect_peer", "phase", "variant", "mode", "world", "m", "n",
                            "dtype", "pattern", "status", "message", "median_us", "p10_us",
                            "p90_us", "busbw_gbps", "mismatches", "max_abs_err", "max_ulp"}) {
    EXPECT_TRUE(ranks[0].contains(field)) << field;
  }
  EXPECT_EQ(ranks[1]["rank"], 1);
  EXPECT_EQ(ranks[1]["variant"], "lamport");
  EXPECT_EQ(ranks[1]["m"], 64);
  EXPECT_EQ(ranks[1]["max_ulp"], 1);
  EXPECT_EQ(ranks[0]["suspect_peer"], -1);
  // Rank 0 took half the case's (slowest-rank) time, so it moved bytes twice as fast.
  EXPECT_DOUBLE_EQ(ranks[0]["busbw_gbps"].get<double>(), 75.0);
  EXPECT_DOUBLE_EQ(ranks[1]["busbw_gbps"].get<double>(), 37.5);
}

TEST(FormatRunJsonTest, HangRankNamesItsPeerAndPhase) {
  Json hang = Parse(testing::SampleRun())["cases"][2];
  EXPECT_EQ(hang["status"], "HANG");
  EXPECT_EQ(hang["variant"], "one_stage");
  EXPECT_EQ(hang["message"], "rank 1 waited for rank 0 in start_sync");
  EXPECT_EQ(hang["ranks"][1]["status"], "HANG");
  EXPECT_EQ(hang["ranks"][1]["suspect_peer"], 0);
  EXPECT_EQ(hang["ranks"][1]["phase"], "start_sync");
  EXPECT_EQ(hang["ranks"][0]["status"], "OK");
}

TEST(FormatRunJsonTest, AutoKeepsRequestedVariantAndReportsResolvedOne) {
  Json wrong = Parse(testing::SampleRun())["cases"][1];
  EXPECT_EQ(wrong["variant"], "auto");
  EXPECT_EQ(wrong["resolved_variant"], "lamport_tb");
  EXPECT_EQ(wrong["mode"], "graph");
  EXPECT_EQ(wrong["dtype"], "fp16");
  EXPECT_EQ(wrong["status"], "WRONG");
  EXPECT_EQ(wrong["mismatches"], 3);
  EXPECT_EQ(wrong["first_bad"], "out[3,17] got 1.5 want 1.25");
  EXPECT_EQ(wrong["message"], "3 mismatches, \"out\" <rank 1> & more");
}

// `auto` picked a kernel plugin (a table of `colltest tune --tune-plugins`): the plugin's name and
// the build that ran, as for a plugin asked for by name.
TEST(FormatRunJsonTest, AutoResolvedToAPluginNamesItAndItsBuild) {
  v1::RunResult run = testing::SampleRun();
  v1::CaseResult& c = *run.mutable_cases(1);
  c.set_resolved_variant(v1::VARIANT_PLUGIN);
  c.mutable_plugin()->set_name("oneshot_norm");
  c.mutable_plugin()->set_version("1.0");
  Json json = Parse(run)["cases"][1];
  EXPECT_EQ(json["variant"], "auto");
  EXPECT_EQ(json["resolved_variant"], "plugin:oneshot_norm");
  EXPECT_EQ(json["plugin"]["name"], "oneshot_norm");
  EXPECT_EQ(json["plugin"]["version"], "1.0");
  EXPECT_EQ(json["ranks"][0]["resolved_variant"], "plugin:oneshot_norm");
}

TEST(FormatRunJsonTest, StatusNames) {
  Json cases = Parse(testing::SampleRun())["cases"];
  EXPECT_EQ(cases[3]["status"], "UNSUPPORTED");
  EXPECT_EQ(cases[3]["variant"], "nccl");
  EXPECT_EQ(cases[3]["ranks"].size(), 0u);

  v1::RunResult run;
  *run.add_cases() = testing::MakeCase(v1::VARIANT_TWO_KERNEL, v1::CASE_STATUS_ERROR);
  run.set_state(v1::RUN_STATE_FAILED);
  Json json = Parse(run);
  EXPECT_EQ(json["state"], "FAILED");
  EXPECT_EQ(json["cases"][0]["status"], "ERROR");
  EXPECT_EQ(json["cases"][0]["variant"], "two_kernel");
}

TEST(FormatRunJsonTest, UnspecifiedEnumsPrintAsTheServerDefault) {
  v1::RunResult run;
  v1::CaseResult* c = run.add_cases();
  c->set_variant(v1::VARIANT_LAMPORT);
  Json json = Parse(run)["cases"][0];
  EXPECT_EQ(json["mode"], "eager");
  EXPECT_EQ(json["dtype"], "bf16");
  EXPECT_EQ(json["pattern"], "normal");
}

TEST(FormatRunJsonTest, EmptyRunStillHasCasesArray) {
  Json json = Parse(v1::RunResult());
  ASSERT_TRUE(json.contains("cases"));
  EXPECT_TRUE(json["cases"].is_array());
  EXPECT_TRUE(json["cases"].empty());
}

Json ParseHealth(const v1::HealthResponse& health) { return Json::parse(FormatHealthJson(health)); }

TEST(FormatHealthJsonTest, TopLevelObjectInOrder) {
  Json json = ParseHealth(testing::SampleHealthOk());
  // Parsed again keeping the order, since the order is part of what is checked.
  const nlohmann::ordered_json ordered =
      nlohmann::ordered_json::parse(FormatHealthJson(testing::SampleHealthOk()));
  std::vector<std::string> keys;
  for (const auto& item : ordered.items()) keys.push_back(item.key());
  EXPECT_THAT(keys,
              ElementsAre("schema_version", "kind", "status", "message", "wall_ms", "level",
                          "verdict_unix_ms", "verdict_age_ms", "cached", "busy", "busy_reason",
                          "self_test", "ranks", "pairs", "groups", "cases", "run_ids", "machine"));
  EXPECT_EQ(json["status"], "OK");
  EXPECT_EQ(json["message"],
            "healthy: 3 ranks, 3 pairs, 2 cases; WARN slow (x median): pair 0-2 at 2.10");
  EXPECT_DOUBLE_EQ(json["wall_ms"].get<double>(), 4321);
  EXPECT_EQ(json["ranks"].size(), 3u);
  EXPECT_EQ(json["pairs"].size(), 3u);
  EXPECT_EQ(json["groups"].size(), 2u);
  EXPECT_EQ(json["cases"].size(), 2u);
  EXPECT_EQ(json["run_ids"], Json::array({"r-7", "r-8"}));
  // An older server's answer: the level it ran is the default, and it was made just now.
  EXPECT_EQ(json["level"], "quick");
  EXPECT_EQ(json["cached"], false);
  EXPECT_EQ(json["busy"], false);
  EXPECT_TRUE(json["verdict_age_ms"].is_null());
  EXPECT_EQ(json["self_test"],
            Json({{"ran", false}, {"passed", false}, {"fault", ""}, {"message", ""}}));
}

constexpr int64_t kVerdictMs = 1700000000000;

Json ParseHealthAt(const v1::HealthResponse& health, int64_t now_ms) {
  return Json::parse(FormatHealthJsonAt(health, absl::FromUnixMillis(now_ms)));
}

TEST(FormatHealthJsonTest, LongLevelShowsSelfTestAndBandwidthAgainstExpected) {
  Json json = ParseHealthAt(testing::SampleHealthLong(), kVerdictMs + 5000);
  EXPECT_EQ(json["level"], "long");
  EXPECT_EQ(json["verdict_unix_ms"], kVerdictMs);
  // A fresh verdict: its age is that of the call, not news.
  EXPECT_TRUE(json["verdict_age_ms"].is_null());
  EXPECT_EQ(json["self_test"], Json({{"ran", true},
                                     {"passed", true},
                                     {"fault", "hang_end_sync:1"},
                                     {"message", "HANG found naming rank 1"}}));
  Json pair = json["pairs"][0];
  EXPECT_DOUBLE_EQ(pair["busbw_gbps"].get<double>(), 180.0);
  EXPECT_DOUBLE_EQ(pair["expected_busbw_gbps"].get<double>(), 350.0);
  EXPECT_EQ(pair["below_expected"], true);
  EXPECT_EQ(pair["status"], "OK");
  EXPECT_EQ(json["ranks"][0]["below_expected"], false);
}

TEST(FormatHealthJsonTest, TargetsNameTheirDevicesUuids) {
  Json json = ParseHealth(testing::SampleHealthLong());
  EXPECT_EQ(json["ranks"][1]["uuids"], Json::array({"GPU-8d1f1111-1111-1111-1111-111111111111"}));
  EXPECT_EQ(json["pairs"][0]["uuids"], Json::array({"GPU-8d1f0000-0000-0000-0000-000000000000",
                                                    "GPU-8d1f1111-1111-1111-1111-111111111111"}));
  EXPECT_EQ(json["machine"]["hostname"], "node-7");
  EXPECT_EQ(json["machine"]["devices"][0]["serial"], "1654922012345");
  // Without a machine the index is all there is: one empty UUID per device, never a missing key.
  EXPECT_EQ(ParseHealth(testing::SampleHealthOk())["pairs"][1]["uuids"], Json::array({"", ""}));
}

TEST(FormatHealthJsonTest, CachedVerdictSaysHowOld) {
  v1::HealthResponse health = testing::SampleHealthLong();
  health.set_cached(true);
  Json json = ParseHealthAt(health, kVerdictMs + 42500);
  EXPECT_EQ(json["cached"], true);
  EXPECT_EQ(json["busy"], false);
  EXPECT_EQ(json["verdict_age_ms"], 42500);
  // A client clock behind the server's does not make a verdict from the future.
  EXPECT_EQ(ParseHealthAt(health, kVerdictMs - 1000)["verdict_age_ms"], 0);
}

TEST(FormatHealthJsonTest, BusyCarriesItsReasonAndTheEarlierVerdictsAge) {
  Json json = ParseHealthAt(testing::SampleHealthBusy(), kVerdictMs + 312000);
  EXPECT_EQ(json["busy"], true);
  EXPECT_EQ(json["busy_reason"], "devices 0,1 in use by pid 4242 (python3)");
  EXPECT_EQ(json["verdict_age_ms"], 312000);
  EXPECT_EQ(json["status"], "HANG");
  // BUSY without an earlier verdict: no age to tell.
  v1::HealthResponse none;
  none.set_busy(true);
  EXPECT_TRUE(ParseHealthAt(none, kVerdictMs)["verdict_age_ms"].is_null());
}

TEST(FormatHealthJsonTest, SlowPairIsAWarnNotAFailure) {
  Json pair = ParseHealth(testing::SampleHealthOk())["pairs"][1];
  EXPECT_EQ(pair["devices"], Json::array({0, 2}));
  EXPECT_EQ(pair["status"], "OK");
  EXPECT_EQ(pair["slow"], true);
  EXPECT_DOUBLE_EQ(pair["latency_us"].get<double>(), 16.8);
  EXPECT_DOUBLE_EQ(pair["median_ratio"].get<double>(), 2.1);
  EXPECT_EQ(pair["suspect_peer"], -1);
  EXPECT_EQ(pair["cases"], 12);
  EXPECT_EQ(ParseHealth(testing::SampleHealthOk())["pairs"][0]["slow"], false);
}

TEST(FormatHealthJsonTest, HangNamesTheRankItsSuspectAndPhase) {
  Json json = ParseHealth(testing::SampleHealthHang());
  EXPECT_EQ(json["status"], "HANG");
  EXPECT_EQ(json["ranks"][1]["devices"], Json::array({1}));
  EXPECT_EQ(json["ranks"][1]["status"], "HANG");
  EXPECT_EQ(json["ranks"][1]["suspect_peer"], 0);
  EXPECT_EQ(json["ranks"][1]["phase"], "lamport phase B");
  EXPECT_EQ(json["ranks"][1]["message"], "timed out after 5000 ms");
  // An OK rank whose suspect_peer was left at the proto default must not accuse device 0.
  EXPECT_EQ(json["ranks"][0]["suspect_peer"], -1);
  EXPECT_TRUE(json["pairs"].is_array());
  EXPECT_TRUE(json["pairs"].empty());
  EXPECT_EQ(json["groups"][0]["devices"], Json::array({0, 1}));
  EXPECT_EQ(json["groups"][0]["state"], "RECOVERING");
  EXPECT_EQ(json["groups"][0]["recoveries"], 1);
  EXPECT_DOUBLE_EQ(json["groups"][0]["last_recovery_ms"].get<double>(), 850.5);
  EXPECT_EQ(json["groups"][0]["since_unix_ms"], 1700000000000);
}

TEST(FormatHealthJsonTest, CasesHaveTheRunJsonShape) {
  const v1::HealthResponse health = testing::SampleHealthHang();
  v1::RunResult run;
  *run.mutable_cases() = health.cases();
  EXPECT_EQ(ParseHealth(health)["cases"], Parse(run)["cases"]);
  EXPECT_EQ(ParseHealth(health)["cases"][0]["ranks"][0]["phase"], "lamport phase B");
}

TEST(FormatHealthJsonTest, ErrorKeepsEveryKeyWithEmptyArrays) {
  Json json = ParseHealth(testing::SampleHealthError());
  EXPECT_EQ(json["status"], "ERROR");
  for (const char* key : {"ranks", "pairs", "cases", "run_ids"}) {
    ASSERT_TRUE(json.contains(key)) << key;
    EXPECT_TRUE(json[key].is_array()) << key;
    EXPECT_TRUE(json[key].empty()) << key;
  }
  EXPECT_EQ(json["groups"][0]["state"], "DEGRADED");
}

TEST(FormatRunJsonTest, DocumentNamesItsKindAndSchemaVersionCasesTheirBytes) {
  const Json json = Json::parse(FormatRunJson(testing::SampleRun()));
  EXPECT_EQ(json["schema_version"], 1);
  EXPECT_EQ(json["kind"], "colltest.run");
  EXPECT_EQ(json["cases"][0]["bytes"], 64 * 7168 * 2);
  EXPECT_DOUBLE_EQ(json["cases"][0]["algbw_gbps"].get<double>(), 37.5);
  EXPECT_EQ(Json::parse(FormatHealthJson(testing::SampleHealthOk()))["kind"], "colltest.health");
}

}  // namespace
}  // namespace colltest::client
