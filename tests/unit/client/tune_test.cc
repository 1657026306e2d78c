#include "client/format/tune.h"

#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/unit/client/sample_run.h"

namespace colltest::client {

// gtest's printer of a kernel in a failure: its name.
void PrintTo(const TuneKernel& k, std::ostream* os) { *os << k.Name(); }

namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using ::testing::StartsWith;

v1::SweepSpec Spec(std::vector<v1::Variant> variants, std::vector<uint32_t> ms,
                   v1::DType dtype = v1::DTYPE_BF16, uint32_t n = 7168) {
  v1::SweepSpec spec;
  spec.set_world_size(2);
  spec.add_n(n);
  spec.set_dtype(dtype);
  spec.add_modes(v1::MODE_GRAPH);
  for (v1::Variant v : variants) spec.add_variants(v);
  for (uint32_t m : ms) spec.add_m(m);
  return spec;
}

const std::vector<v1::Variant> kFour = {v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL,
                                        v1::VARIANT_LAMPORT, v1::VARIANT_LAMPORT_TB};

void Add(v1::RunResult& run, v1::Variant variant, uint32_t m, v1::CaseStatus status,
         double us = 0) {
  v1::CaseResult c = testing::MakeCase(variant, status);
  c.set_mode(v1::MODE_GRAPH);
  c.set_m(m);
  c.mutable_timing()->set_median_us(us);
  *run.add_cases() = c;
}

void AddOk(v1::RunResult& run, uint32_t m, double one_stage, double two_kernel, double lamport,
           double lamport_tb) {
  Add(run, v1::VARIANT_ONE_STAGE, m, v1::CASE_STATUS_OK, one_stage);
  Add(run, v1::VARIANT_TWO_KERNEL, m, v1::CASE_STATUS_OK, two_kernel);
  Add(run, v1::VARIANT_LAMPORT, m, v1::CASE_STATUS_OK, lamport);
  Add(run, v1::VARIANT_LAMPORT_TB, m, v1::CASE_STATUS_OK, lamport_tb);
}

v1::RunResult EmptyRun() {
  v1::RunResult run;
  run.set_run_id("r-7");
  run.set_state(v1::RUN_STATE_DONE);
  return run;
}

v1::ListDevicesResponse H200() {
  v1::ListDevicesResponse devices;
  devices.set_backend("cuda");
  for (int i = 0; i < 2; ++i) {
    v1::Device* d = devices.add_devices();
    d->set_index(i);
    d->set_name(i == 0 ? "NVIDIA H200" : "other");
  }
  return devices;
}

constexpr int64_t kCreated = 1796000000000;

TuneTable Build(const v1::SweepSpec& spec, const v1::RunResult& run) {
  return BuildTuneTable(spec, run, H200(), kCreated);
}

// lamport_tb up to m=64, one_stage from m=128.
v1::RunResult TwoRegimeRun() {
  v1::RunResult run = EmptyRun();
  AddOk(run, 1, 10.1, 10.8, 8.7, 7.3);
  AddOk(run, 64, 14.0, 15.0, 13.0, 12.5);
  AddOk(run, 128, 20.0, 24.0, 30.0, 40.0);
  return run;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

TEST(BuildTuneTableTest, FastestOkVariantPerM) {
  v1::RunResult run = EmptyRun();
  AddOk(run, 1, 10.1, 10.8, 8.7, 7.3);
  AddOk(run, 128, 20.0, 21.5, 30.0, 40.0);
  AddOk(run, 1024, 90.0, 80.0, 300.0, 400.0);
  const TuneTable table = Build(Spec(kFour, {1, 128, 1024}), run);
  ASSERT_EQ(table.rows.size(), 3u);
  EXPECT_EQ(table.rows[0].m, 1u);
  EXPECT_EQ(table.rows[0].best, v1::VARIANT_LAMPORT_TB);
  EXPECT_EQ(table.rows[1].best, v1::VARIANT_ONE_STAGE);
  EXPECT_EQ(table.rows[2].best, v1::VARIANT_TWO_KERNEL);
  EXPECT_THAT(table.rows[0].us,
              ElementsAre(Pair(v1::VARIANT_ONE_STAGE, 10.1), Pair(v1::VARIANT_TWO_KERNEL, 10.8),
                          Pair(v1::VARIANT_LAMPORT, 8.7), Pair(v1::VARIANT_LAMPORT_TB, 7.3)));
  EXPECT_TRUE(table.dropped.empty());
}

TEST(BuildTuneTableTest, FailedCasesDoNotCompete) {
  v1::RunResult run = EmptyRun();
  // The fastest times belong to cases that failed: they must not be picked.
  Add(run, v1::VARIANT_ONE_STAGE, 8, v1::CASE_STATUS_OK, 12.0);
  Add(run, v1::VARIANT_TWO_KERNEL, 8, v1::CASE_STATUS_WRONG, 1.0);
  Add(run, v1::VARIANT_LAMPORT, 8, v1::CASE_STATUS_HANG, 2.0);
  Add(run, v1::VARIANT_LAMPORT_TB, 8, v1::CASE_STATUS_UNSUPPORTED, 3.0);
  const TuneTable table = Build(Spec(kFour, {8}), run);
  ASSERT_EQ(table.rows.size(), 1u);
  EXPECT_EQ(table.rows[0].best, v1::VARIANT_ONE_STAGE);
  EXPECT_THAT(table.rows[0].us, ElementsAre(Pair(v1::VARIANT_ONE_STAGE, 12.0)));
}

TEST(BuildTuneTableTest, UntimedOkDoesNotWinWithZero) {
  v1::RunResult run = EmptyRun();
  Add(run, v1::VARIANT_ONE_STAGE, 8, v1::CASE_STATUS_OK, 0);
  Add(run, v1::VARIANT_LAMPORT, 8, v1::CASE_STATUS_OK, 9.0);
  const TuneTable table = Build(Spec({v1::VARIANT_ONE_STAGE, v1::VARIANT_LAMPORT}, {8}), run);
  ASSERT_EQ(table.rows.size(), 1u);
  EXPECT_EQ(table.rows[0].best, v1::VARIANT_LAMPORT);
  EXPECT_THAT(table.rows[0].us, ElementsAre(Pair(v1::VARIANT_LAMPORT, 9.0)));
}

TEST(BuildTuneTableTest, TiesGoToTheVariantListedFirst) {
  v1::RunResult run = EmptyRun();
  Add(run, v1::VARIANT_ONE_STAGE, 8, v1::CASE_STATUS_OK, 9.5);
  Add(run, v1::VARIANT_LAMPORT, 8, v1::CASE_STATUS_OK, 9.5);
  Add(run, v1::VARIANT_TWO_KERNEL, 8, v1::CASE_STATUS_OK, 11.0);
  EXPECT_EQ(
      Build(Spec({v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL, v1::VARIANT_LAMPORT}, {8}), run)
          .rows[0]
          .best,
      v1::VARIANT_ONE_STAGE);
  EXPECT_EQ(
      Build(Spec({v1::VARIANT_LAMPORT, v1::VARIANT_TWO_KERNEL, v1::VARIANT_ONE_STAGE}, {8}), run)
          .rows[0]
          .best,
      v1::VARIANT_LAMPORT);
}

// A case of kernel plugin NAME at m.
void AddPlugin(v1::RunResult& run, const std::string& name, uint32_t m, v1::CaseStatus status,
               double us = 0) {
  Add(run, v1::VARIANT_PLUGIN, m, status, us);
  run.mutable_cases(run.cases_size() - 1)->mutable_plugin()->set_name(name);
}

// colltest's variants and, after them, the plugins of `tune --tune-plugins`.
v1::SweepSpec PluginSpec(std::vector<uint32_t> ms) {
  v1::SweepSpec spec = Spec({v1::VARIANT_ONE_STAGE, v1::VARIANT_LAMPORT}, std::move(ms));
  spec.add_plugins("x");
  spec.add_plugins("y");
  return spec;
}

TEST(BuildTuneTableTest, APluginIsAKernelOfTheTableByItsName) {
  v1::RunResult run = EmptyRun();
  Add(run, v1::VARIANT_ONE_STAGE, 1, v1::CASE_STATUS_OK, 10.0);
  Add(run, v1::VARIANT_LAMPORT, 1, v1::CASE_STATUS_OK, 8.0);
  AddPlugin(run, "x", 1, v1::CASE_STATUS_OK, 6.0);
  AddPlugin(run, "y", 1, v1::CASE_STATUS_OK, 7.0);
  // At m=8 plugin x ties with one_stage and y is faster than both, but WRONG.
  Add(run, v1::VARIANT_ONE_STAGE, 8, v1::CASE_STATUS_OK, 12.0);
  Add(run, v1::VARIANT_LAMPORT, 8, v1::CASE_STATUS_OK, 13.0);
  AddPlugin(run, "x", 8, v1::CASE_STATUS_OK, 12.0);
  AddPlugin(run, "y", 8, v1::CASE_STATUS_WRONG, 1.0);
  const TuneTable table = Build(PluginSpec({1, 8}), run);
  EXPECT_THAT(table.kernels,
              ElementsAre(TuneKernel(v1::VARIANT_ONE_STAGE), TuneKernel(v1::VARIANT_LAMPORT),
                          TuneKernel::Plugin("x"), TuneKernel::Plugin("y")));
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0].best, TuneKernel::Plugin("x"));
  EXPECT_EQ(table.rows[0].best.Name(), "plugin:x");
  EXPECT_THAT(table.rows[0].us,
              ElementsAre(Pair(v1::VARIANT_ONE_STAGE, 10.0), Pair(v1::VARIANT_LAMPORT, 8.0),
                          Pair(TuneKernel::Plugin("x"), 6.0), Pair(TuneKernel::Plugin("y"), 7.0)));
  // A tie goes to the kernel listed first: colltest's own before the plugins.
  EXPECT_EQ(table.rows[1].best, v1::VARIANT_ONE_STAGE);
  EXPECT_THAT(table.rows[1].us,
              ElementsAre(Pair(v1::VARIANT_ONE_STAGE, 12.0), Pair(v1::VARIANT_LAMPORT, 13.0),
                          Pair(TuneKernel::Plugin("x"), 12.0)));

  const nlohmann::ordered_json json = nlohmann::ordered_json::parse(FormatTuneJson(table));
  EXPECT_EQ(json["rows"][0]["best"], "plugin:x");
  EXPECT_EQ(json["rows"][0]["us"],
            nlohmann::ordered_json::parse(
                R"({"one_stage": 10.0, "lamport": 8.0, "plugin:x": 6.0, "plugin:y": 7.0})"));
  EXPECT_EQ(json["rows"][1]["best"], "one_stage");

  const std::vector<std::string> lines = Lines(FormatTuneText(table));
  ASSERT_EQ(lines.size(), 5u) << FormatTuneText(table);
  EXPECT_EQ(lines[1], "m   bytes  one_stage  lamport  plugin:x  plugin:y  best       speed-up");
  EXPECT_EQ(lines[2], "1   14336       10.0      8.0       6.0       7.0  plugin:x      1.17x");
  EXPECT_EQ(lines[3], "8  114688       12.0     13.0      12.0         -  one_stage     1.00x");
  EXPECT_EQ(lines[3].size(), lines[1].size());
  EXPECT_EQ(lines.back(), "crossovers: plugin:x up to m=1 (14336 B), one_stage from m=8");
}

TEST(BuildTuneTableTest, ADroppedRowNamesThePlugins) {
  v1::RunResult run = EmptyRun();
  Add(run, v1::VARIANT_ONE_STAGE, 1, v1::CASE_STATUS_UNSUPPORTED);
  AddPlugin(run, "x", 1, v1::CASE_STATUS_HANG);
  const TuneTable table = Build(PluginSpec({1}), run);
  ASSERT_EQ(table.dropped.size(), 1u);
  EXPECT_EQ(DroppedRowWarning(table.dropped[0]),
            "no tune row for m=1: no variant OK (one_stage UNSUPPORTED, lamport no result, "
            "plugin:x HANG, plugin:y no result)");
}

TEST(BuildTuneTableTest, RowWithoutAnOkVariantIsDroppedAndExplained) {
  v1::RunResult run = EmptyRun();
  AddOk(run, 1, 10.1, 10.8, 8.7, 7.3);
  Add(run, v1::VARIANT_ONE_STAGE, 1024, v1::CASE_STATUS_UNSUPPORTED);
  Add(run, v1::VARIANT_TWO_KERNEL, 1024, v1::CASE_STATUS_HANG);
  Add(run, v1::VARIANT_LAMPORT, 1024, v1::CASE_STATUS_OK, 0);
  // lamport_tb has no case at m=1024 at all.
  AddOk(run, 2048, 90.0, 80.0, 300.0, 400.0);
  const TuneTable table = Build(Spec(kFour, {1, 1024, 2048}), run);
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0].m, 1u);
  EXPECT_EQ(table.rows[1].m, 2048u);
  ASSERT_EQ(table.dropped.size(), 1u);
  EXPECT_EQ(table.dropped[0].m, 1024u);
  EXPECT_EQ(DroppedRowWarning(table.dropped[0]),
            "no tune row for m=1024: no variant OK (one_stage UNSUPPORTED, two_kernel HANG, "
            "lamport OK untimed, lamport_tb no result)");
  const nlohmann::json json = nlohmann::json::parse(FormatTuneJson(table));
  ASSERT_EQ(json["rows"].size(), 2u);
  EXPECT_EQ(json["rows"][1]["m"], 2048);
}

TEST(BuildTuneTableTest, NoOkCaseAtAllGivesNoRow) {
  v1::RunResult run = EmptyRun();
  Add(run, v1::VARIANT_ONE_STAGE, 1, v1::CASE_STATUS_WRONG, 5.0);
  const TuneTable table = Build(Spec({v1::VARIANT_ONE_STAGE}, {1, 8}), run);
  EXPECT_TRUE(table.rows.empty());
  ASSERT_EQ(table.dropped.size(), 2u);
  EXPECT_EQ(DroppedRowWarning(table.dropped[0]),
            "no tune row for m=1: no variant OK (one_stage WRONG)");
  EXPECT_EQ(DroppedRowWarning(table.dropped[1]),
            "no tune row for m=8: no variant OK (one_stage no result)");
}

TEST(BuildTuneTableTest, BytesAreMTimesNTimesTheElementSize) {
  // 2 bytes of bf16 (common/element_size.h, tested in tests/unit/common/element_size_test.cc).
  v1::RunResult run = EmptyRun();
  Add(run, v1::VARIANT_ONE_STAGE, 1, v1::CASE_STATUS_OK, 5.0);
  Add(run, v1::VARIANT_ONE_STAGE, 64, v1::CASE_STATUS_OK, 5.0);
  EXPECT_EQ(Build(Spec({v1::VARIANT_ONE_STAGE}, {1, 64}), run).rows[1].bytes, 917504u);
  const TuneTable fp32 = Build(Spec({v1::VARIANT_ONE_STAGE}, {1, 64}, v1::DTYPE_FP32, 4096), run);
  ASSERT_EQ(fp32.rows.size(), 2u);
  EXPECT_EQ(fp32.rows[0].bytes, 16384u);
  EXPECT_EQ(fp32.rows[1].bytes, 1048576u);
  // Above 4 GiB: no 32-bit overflow.
  Add(run, v1::VARIANT_ONE_STAGE, 4000000, v1::CASE_STATUS_OK, 5.0);
  EXPECT_EQ(
      Build(Spec({v1::VARIANT_ONE_STAGE}, {4000000}, v1::DTYPE_FP32, 65536), run).rows[0].bytes,
      uint64_t{4000000} * 65536 * 4);
}

TEST(BuildTuneTableTest, RowsFollowAscendingMOnce) {
  v1::RunResult run = EmptyRun();
  for (uint32_t m : {64u, 1u, 8u}) Add(run, v1::VARIANT_LAMPORT, m, v1::CASE_STATUS_OK, m + 1.0);
  const TuneTable table = Build(Spec({v1::VARIANT_LAMPORT}, {64, 1, 8, 1}), run);
  ASSERT_EQ(table.rows.size(), 3u);
  EXPECT_EQ(table.rows[0].m, 1u);
  EXPECT_EQ(table.rows[1].m, 8u);
  EXPECT_EQ(table.rows[2].m, 64u);
}

// colltestd resolves a case of epilogue E only from a table of epilogue E: the table must say
// which one it was measured with.
TEST(BuildTuneTableTest, RecordsTheSpecsEpilogue) {
  v1::SweepSpec spec = Spec(kFour, {1, 64, 128});
  spec.add_epilogues(v1::EPILOGUE_FP8_TOKEN);
  spec.set_keep_normed(true);
  const TuneTable table = Build(spec, TwoRegimeRun());
  EXPECT_EQ(table.epilogue, v1::EPILOGUE_FP8_TOKEN);
  EXPECT_TRUE(table.keep_normed);
  const nlohmann::json json = nlohmann::json::parse(FormatTuneJson(table));
  EXPECT_EQ(json["epilogue"], "fp8_token");
  EXPECT_EQ(json["keep_normed"], true);
  EXPECT_THAT(FormatTuneText(table),
              StartsWith("tune W=2 n=7168 bf16 graph fp8_token keep_normed  backend cuda"));
  // No epilogue is none; keep_normed means nothing without a quantising one.
  spec.clear_epilogues();
  const TuneTable plain = Build(spec, TwoRegimeRun());
  EXPECT_EQ(plain.epilogue, v1::EPILOGUE_NONE);
  EXPECT_FALSE(plain.keep_normed);
  EXPECT_THAT(FormatTuneText(plain), StartsWith("tune W=2 n=7168 bf16 graph  backend cuda"));
}

TEST(TuneTableFileNameTest, NamesTheKeyAndTheEpilogueWhenNotNone) {
  TuneTable table = Build(Spec(kFour, {1}), TwoRegimeRun());
  // The name of the table committed in tune/.
  EXPECT_EQ(TuneTableFileName(table), "tune_cuda_h200_w2_bf16_graph_n7168.json");
  table.epilogue = v1::EPILOGUE_NVFP4;
  EXPECT_EQ(TuneTableFileName(table), "tune_cuda_h200_w2_bf16_graph_n7168_nvfp4.json");
  table.epilogue = v1::EPILOGUE_FP8_TOKEN;
  table.keep_normed = true;
  EXPECT_EQ(TuneTableFileName(table),
            "tune_cuda_h200_w2_bf16_graph_n7168_fp8_token_keep_normed.json");
  table = TuneTable();
  table.backend = "cpu";
  table.world = 4;
  table.dtype = v1::DTYPE_FP32;
  table.mode = v1::MODE_EAGER;
  table.n = 64;
  EXPECT_EQ(TuneTableFileName(table), "tune_cpu_w4_fp32_eager_n64.json");
  table.device = "AMD Instinct MI300X";
  EXPECT_EQ(TuneTableFileName(table), "tune_cpu_mi300x_w4_fp32_eager_n64.json");
}

TEST(FormatTuneJsonTest, ExactShapeParsedBack) {
  v1::RunResult run = TwoRegimeRun();
  Add(run, v1::VARIANT_LAMPORT_TB, 256, v1::CASE_STATUS_UNSUPPORTED);
  Add(run, v1::VARIANT_ONE_STAGE, 256, v1::CASE_STATUS_OK, 30.25);
  Add(run, v1::VARIANT_LAMPORT, 256, v1::CASE_STATUS_WRONG, 1.0);
  v1::SweepSpec spec = Spec(kFour, {1, 64, 128, 256}, v1::DTYPE_FP16);
  spec.set_world_size(4);
  const std::string text = FormatTuneJson(Build(spec, run));
  const nlohmann::ordered_json json = nlohmann::ordered_json::parse(text);

  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  EXPECT_THAT(keys, ElementsAre("schema_version", "kind", "version", "backend", "device", "world",
                                "dtype", "mode", "n", "epilogue", "keep_normed", "created_unix_ms",
                                "run_id", "rows"));
  EXPECT_EQ(json["epilogue"], "none");
  EXPECT_EQ(json["keep_normed"], false);
  EXPECT_EQ(json["kind"], "colltest-tune-table");
  EXPECT_EQ(json["schema_version"], 1);
  EXPECT_EQ(json["version"], 1);
  EXPECT_EQ(json["backend"], "cuda");
  EXPECT_EQ(json["device"], "NVIDIA H200");
  EXPECT_EQ(json["world"], 4);
  EXPECT_EQ(json["dtype"], "fp16");
  EXPECT_EQ(json["mode"], "graph");
  EXPECT_EQ(json["n"], 7168);
  EXPECT_EQ(json["created_unix_ms"], kCreated);
  EXPECT_TRUE(json["created_unix_ms"].is_number_integer());
  EXPECT_EQ(json["run_id"], "r-7");
  ASSERT_TRUE(json["rows"].is_array());
  ASSERT_EQ(json["rows"].size(), 4u);

  const nlohmann::ordered_json& first = json["rows"][0];
  std::vector<std::string> row_keys;
  for (const auto& item : first.items()) row_keys.push_back(item.key());
  EXPECT_THAT(row_keys, ElementsAre("m", "bytes", "best", "us"));
  EXPECT_EQ(first["m"], 1);
  EXPECT_EQ(first["bytes"], 14336);
  EXPECT_EQ(first["best"], "lamport_tb");
  std::vector<std::string> us_keys;
  for (const auto& item : first["us"].items()) us_keys.push_back(item.key());
  EXPECT_THAT(us_keys, ElementsAre("one_stage", "two_kernel", "lamport", "lamport_tb"));
  EXPECT_DOUBLE_EQ(first["us"]["one_stage"].get<double>(), 10.1);
  EXPECT_DOUBLE_EQ(first["us"]["two_kernel"].get<double>(), 10.8);
  EXPECT_DOUBLE_EQ(first["us"]["lamport"].get<double>(), 8.7);
  EXPECT_DOUBLE_EQ(first["us"]["lamport_tb"].get<double>(), 7.3);

  EXPECT_EQ(json["rows"][1]["m"], 64);
  EXPECT_EQ(json["rows"][1]["bytes"], 917504);
  EXPECT_EQ(json["rows"][1]["best"], "lamport_tb");
  EXPECT_EQ(json["rows"][2]["m"], 128);
  EXPECT_EQ(json["rows"][2]["best"], "one_stage");

  // Only the variants OK at that m.
  const nlohmann::ordered_json& last = json["rows"][3];
  EXPECT_EQ(last["m"], 256);
  EXPECT_EQ(last["bytes"], 3670016);
  EXPECT_EQ(last["best"], "one_stage");
  EXPECT_EQ(last["us"], nlohmann::ordered_json::parse(R"({"one_stage": 30.25})"));
}

TEST(FormatTuneTextTest, RowsSpeedUpAndCrossovers) {
  v1::RunResult run = TwoRegimeRun();
  Add(run, v1::VARIANT_LAMPORT, 256, v1::CASE_STATUS_OK, 50.0);
  const std::vector<std::string> lines =
      Lines(FormatTuneText(Build(Spec(kFour, {1, 64, 128, 256}), run)));
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[0],
            "tune W=2 n=7168 bf16 graph  backend cuda  device NVIDIA H200  run r-7  (median us)");
  EXPECT_EQ(lines[1],
            "  m    bytes  one_stage  two_kernel  lamport  lamport_tb  best        speed-up");
  EXPECT_EQ(lines[2],
            "  1    14336       10.1        10.8      8.7         7.3  lamport_tb     1.19x");
  EXPECT_EQ(lines[3],
            " 64   917504       14.0        15.0     13.0        12.5  lamport_tb     1.04x");
  EXPECT_EQ(lines[4],
            "128  1835008       20.0        24.0     30.0        40.0  one_stage      1.20x");
  // One OK variant: no time to compare, and dashes for the others.
  EXPECT_EQ(lines[5],
            "256  3670016          -           -     50.0           -  lamport            -");
  EXPECT_EQ(lines[6],
            "crossovers: lamport_tb up to m=64 (917504 B), one_stage at m=128 (1835008 B), "
            "lamport from m=256");
}

TEST(FormatTuneTextTest, TwoRegimes) {
  const std::vector<std::string> lines =
      Lines(FormatTuneText(Build(Spec(kFour, {1, 64, 128}), TwoRegimeRun())));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "crossovers: lamport_tb up to m=64 (917504 B), one_stage from m=128");
}

TEST(FormatTuneTextTest, MiddleRunSpanningSeveralM) {
  v1::RunResult run = TwoRegimeRun();
  AddOk(run, 256, 30.0, 35.0, 60.0, 80.0);
  AddOk(run, 512, 70.0, 60.0, 120.0, 160.0);
  const std::vector<std::string> lines =
      Lines(FormatTuneText(Build(Spec(kFour, {1, 64, 128, 256, 512}), run)));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(),
            "crossovers: lamport_tb up to m=64 (917504 B), one_stage from m=128 up to m=256 "
            "(3670016 B), two_kernel from m=512");
}

TEST(FormatTuneTextTest, OneVariantEverywhereHasNoCrossover) {
  v1::RunResult run = EmptyRun();
  AddOk(run, 1, 10.0, 11.0, 12.0, 13.0);
  AddOk(run, 8, 10.0, 11.0, 12.0, 13.0);
  const std::vector<std::string> lines = Lines(FormatTuneText(Build(Spec(kFour, {1, 8}), run)));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "crossovers: none (one_stage at every m)");
}

TEST(FormatTuneTest, PicksTheFormat) {
  const TuneTable table = Build(Spec(kFour, {1, 64, 128}), TwoRegimeRun());
  EXPECT_EQ(FormatTune(table, OutputFormat::kJson), FormatTuneJson(table));
  EXPECT_EQ(FormatTune(table, OutputFormat::kTable), FormatTuneText(table));
  EXPECT_THAT(FormatTune(table, OutputFormat::kTable), StartsWith("tune W=2 "));
}

}  // namespace
}  // namespace colltest::client
