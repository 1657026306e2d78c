#include "server/runs/tune_table.h"

#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {

// gtest's printer of a kernel in a failure: its name.
void PrintTo(const TuneKernel& k, std::ostream* os) { *os << k.Name(); }

namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;

// `extra`: more fields, each followed by a comma (`"epilogue": "nvfp4", `).
std::string Table(int world = 2, const std::string& mode = "graph", int n = 7168,
                  const std::string& extra = "") {
  return R"({"kind": "colltest-tune-table", "version": 1, "backend": "cuda",
    "device": "NVIDIA H200", )" +
         extra + R"("world": )" + std::to_string(world) + R"(, "dtype": "bf16", "mode": ")" + mode +
         R"(", "n": )" + std::to_string(n) + R"(, "rows": [
      {"m": 64, "bytes": 917504, "best": "lamport", "us": {"lamport": 11.8}},
      {"m": 1, "bytes": 14336, "best": "lamport_tb", "us": {"lamport_tb": 7.3}},
      {"m": 1024, "bytes": 14680064, "best": "one_stage", "us": {"one_stage": 58.7}}]})";
}

AutoCase Case(const std::string& backend, uint32_t world, v1::DType dtype, v1::Mode mode,
              uint32_t m, uint32_t n, v1::Epilogue epilogue = v1::EPILOGUE_NONE,
              bool keep_normed = false) {
  return {.backend = backend,
          .world = world,
          .dtype = dtype,
          .mode = mode,
          .epilogue = epilogue,
          .keep_normed = keep_normed,
          .m = m,
          .n = n};
}

TEST(TuneTableTest, ParsesATableAndSortsItsRowsByBytes) {
  absl::StatusOr<TuneTable> t = ParseTuneTable(Table(), "h200_w2.json");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->world, 2u);
  EXPECT_EQ(t->mode, v1::MODE_GRAPH);
  ASSERT_EQ(t->rows.size(), 3u);
  EXPECT_EQ(t->rows[0].m, 1u);
  EXPECT_EQ(t->rows[0].bytes, 14336u);  // recomputed from m * n * 2, not trusted from the file
  EXPECT_EQ(t->rows[2].best, v1::VARIANT_ONE_STAGE);
}

TEST(TuneTableTest, BadTablesAreRefusedNamingTheFileAndTheField) {
  struct Bad {
    std::string json;
    std::string field;
  };
  for (const Bad& b : {Bad{"[]", "not a JSON object"}, Bad{"{", "not a JSON object"},
                       Bad{R"({"kind": "x"})", "kind"},
                       Bad{R"({"kind": "colltest-tune-table", "version": 2})", "version"},
                       Bad{Table(0), "world"}, Bad{Table(2, "replay"), "mode"},
                       Bad{R"({"kind": "colltest-tune-table", "version": 1, "backend": "cuda",
                              "world": 2, "dtype": "bf16", "n": 8, "rows": []})",
                           "rows"},
                       Bad{Table(2, "graph", 7168, R"("epilogue": "fp4", )"), "epilogue"},
                       Bad{Table(2, "graph", 7168, R"("epilogue": 2, )"), "epilogue"},
                       Bad{Table(2, "graph", 7168, R"("epilogue": "unspecified", )"), "epilogue"},
                       Bad{Table(2, "graph", 7168, R"("keep_normed": "yes", )"), "keep_normed"},
                       Bad{R"({"kind": "colltest-tune-table", "version": 1, "backend": "cuda",
                              "world": 2, "dtype": "bf16", "n": 8,
                              "rows": [{"m": 1, "best": "auto"}]})",
                           "rows[m=1].best"}}) {
    absl::StatusOr<TuneTable> t = ParseTuneTable(b.json, "bad.json");
    ASSERT_FALSE(t.ok()) << b.json;
    EXPECT_THAT(t.status().message(), HasSubstr("tune table bad.json: " + b.field));
  }
}

TEST(TuneTableTest, ResolvesTheRowAtOrBelowTheCasesBytes) {
  TuneTables tables({*ParseTuneTable(Table(), "h200_w2.json")});
  auto pick = [&](uint32_t m, uint32_t n = 7168) {
    return tables.Resolve(Case("cuda", 2, v1::DTYPE_BF16, v1::MODE_GRAPH, m, n));
  };
  EXPECT_EQ(pick(1)->kernel, v1::VARIANT_LAMPORT_TB);
  EXPECT_EQ(pick(63)->kernel, v1::VARIANT_LAMPORT_TB);
  EXPECT_EQ(pick(64)->kernel, v1::VARIANT_LAMPORT);
  EXPECT_EQ(pick(1023)->kernel, v1::VARIANT_LAMPORT);
  EXPECT_EQ(pick(4096)->kernel, v1::VARIANT_ONE_STAGE);
  // Bytes, not rows: 128 rows of 3584 are 917504 B, the m = 64 row of n = 7168.
  EXPECT_EQ(pick(128, 3584)->kernel, v1::VARIANT_LAMPORT);
  EXPECT_THAT(pick(64)->why, HasSubstr("lamport: tune table h200_w2.json (cuda W=2 bf16 graph "
                                       "n=7168), row m=64 (917504 B)"));
  // Nothing for another world size, dtype or backend.
  EXPECT_FALSE(tables.Resolve(Case("cuda", 4, v1::DTYPE_BF16, v1::MODE_GRAPH, 1, 7168)).ok());
  EXPECT_FALSE(tables.Resolve(Case("cuda", 2, v1::DTYPE_FP16, v1::MODE_GRAPH, 1, 7168)).ok());
  EXPECT_FALSE(tables.Resolve(Case("hip", 2, v1::DTYPE_BF16, v1::MODE_GRAPH, 1, 7168)).ok());
}

// Measured on 2 x H200 (tune/tune_cuda_h200_w2_bf16_graph_n7168.json): at m = 700 the row at or
// below (m = 512, lamport 36.60 us, one_stage 37.03) names lamport, which took 48.83 us there
// against one_stage's 45.57; the times interpolated between m = 512 and 1024 cross before 700.
TEST(TuneTableTest, BetweenRowsTheLeastInterpolatedTimeWins) {
  const std::string json = R"({"kind": "colltest-tune-table", "version": 1, "backend": "cuda",
    "world": 2, "dtype": "bf16", "mode": "graph", "n": 7168, "rows": [
      {"m": 512, "best": "lamport", "us": {"one_stage": 37.03, "lamport": 36.60}},
      {"m": 1024, "best": "one_stage", "us": {"one_stage": 58.87, "lamport": 68.60}}]})";
  TuneTables tables({*ParseTuneTable(json, "t.json")});
  auto pick = [&](uint32_t m) {
    return *tables.Resolve(Case("cuda", 2, v1::DTYPE_BF16, v1::MODE_GRAPH, m, 7168));
  };
  EXPECT_EQ(pick(512).kernel, v1::VARIANT_LAMPORT);  // a row: its measured best
  EXPECT_EQ(pick(520).kernel, v1::VARIANT_LAMPORT);  // lamport 37.10, one_stage 37.37
  EXPECT_EQ(pick(700).kernel, v1::VARIANT_ONE_STAGE);
  EXPECT_THAT(pick(700).why, HasSubstr("one_stage: tune table t.json (cuda W=2 bf16 graph "
                                       "n=7168), interpolated between rows m=512 and m=1024 ("
                                       "45.05"));
  EXPECT_EQ(pick(4096).kernel, v1::VARIANT_ONE_STAGE);  // above the table: its last row
}

TEST(TuneTableTest, ATimeThatIsNoVariantOrNoPositiveNumberIsRefused) {
  for (const std::string us : {R"({"auto": 3.0})", R"({"lamport": -1})", R"({"lamport": "x"})"}) {
    const std::string json = R"({"kind": "colltest-tune-table", "version": 1, "backend": "cuda",
      "world": 2, "dtype": "bf16", "n": 8, "rows": [{"m": 1, "best": "lamport", "us": )" +
                             us + "}]}";
    absl::StatusOr<TuneTable> t = ParseTuneTable(json, "bad.json");
    ASSERT_FALSE(t.ok()) << us;
    EXPECT_THAT(t.status().message(), HasSubstr("tune table bad.json: rows[m=1].us."));
  }
}

TEST(TuneTableTest, PrefersTheSameModeThenTheNearestHiddenSize) {
  TuneTables tables({*ParseTuneTable(Table(2, "eager"), "eager.json"),
                     *ParseTuneTable(Table(2, "graph", 4096), "graph_4096.json"),
                     *ParseTuneTable(Table(2, "graph", 8192), "graph_8192.json")});
  EXPECT_THAT(tables.Resolve(Case("cuda", 2, v1::DTYPE_BF16, v1::MODE_GRAPH, 1, 7168))->why,
              HasSubstr("graph_8192.json"));
  EXPECT_THAT(tables.Resolve(Case("cuda", 2, v1::DTYPE_BF16, v1::MODE_EAGER, 1, 4096))->why,
              HasSubstr("eager.json"));
}

// A table measured with a quantising epilogue stands for that epilogue alone: the fused
// quantisation changes every variant's cost, so its crossovers say nothing of another epilogue.
TEST(TuneTableTest, ATableResolvesOnlyCasesOfItsEpilogue) {
  absl::StatusOr<TuneTable> fp8 =
      ParseTuneTable(Table(2, "graph", 7168, R"("epilogue": "fp8_token", )"), "fp8.json");
  ASSERT_TRUE(fp8.ok()) << fp8.status();
  EXPECT_EQ(fp8->epilogue, v1::EPILOGUE_FP8_TOKEN);
  TuneTables tables({*fp8});
  absl::StatusOr<AutoChoice> token = tables.Resolve(
      Case("cuda", 2, v1::DTYPE_BF16, v1::MODE_GRAPH, 64, 7168, v1::EPILOGUE_FP8_TOKEN));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->kernel, v1::VARIANT_LAMPORT);
  EXPECT_THAT(token->why, HasSubstr("tune table fp8.json (cuda W=2 bf16 graph n=7168 fp8_token)"));
  for (v1::Epilogue other : {v1::EPILOGUE_NONE, v1::EPILOGUE_UNSPECIFIED, v1::EPILOGUE_NVFP4}) {
    absl::StatusOr<AutoChoice> c =
        tables.Resolve(Case("cuda", 2, v1::DTYPE_BF16, v1::MODE_GRAPH, 64, 7168, other));
    EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound) << other;
  }
}

TEST(TuneTableTest, ATableWithoutTheFieldIsEpilogueNone) {
  absl::StatusOr<TuneTable> t = ParseTuneTable(Table(), "plain.json");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->epilogue, v1::EPILOGUE_NONE);
  EXPECT_FALSE(t->keep_normed);
  TuneTables tables({*t});
  // A case that left the epilogue unset asked for none.
  for (v1::Epilogue e : {v1::EPILOGUE_NONE, v1::EPILOGUE_UNSPECIFIED}) {
    absl::StatusOr<AutoChoice> c =
        tables.Resolve(Case("cuda", 2, v1::DTYPE_BF16, v1::MODE_GRAPH, 64, 7168, e));
    ASSERT_TRUE(c.ok()) << c.status();
    // The description of a table of epilogue none is what it was before epilogues were recorded.
    EXPECT_THAT(c->why, HasSubstr("tune table plain.json (cuda W=2 bf16 graph n=7168), row m=64"));
  }
}

TEST(TuneTableTest, NoTableOfTheCasesEpilogueIsReasonedWithTheOnesThereAndHowToMakeOne) {
  TuneTables tables({*ParseTuneTable(Table(), "none.json"),
                     *ParseTuneTable(Table(2, "eager", 7168, R"("epilogue": "fp8_tensor", )"),
                                     "fp8_tensor.json")});
  absl::StatusOr<AutoChoice> nvfp4 =
      tables.Resolve(Case("cuda", 2, v1::DTYPE_BF16, v1::MODE_GRAPH, 64, 7168, v1::EPILOGUE_NVFP4));
  ASSERT_FALSE(nvfp4.ok());
  EXPECT_EQ(nvfp4.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(nvfp4.status().message(),
            "auto: no tune table for cuda W=2 bf16 epilogue nvfp4 (cuda W=2 bf16 has tables for "
            "epilogue none, fp8_tensor; measure one with `colltest tune --world 2 --dtype bf16 "
            "--epilogue nvfp4` and put it in colltestd's --tune-dir)");
  absl::StatusOr<AutoChoice> w4 =
      tables.Resolve(Case("cuda", 4, v1::DTYPE_BF16, v1::MODE_GRAPH, 64, 7168));
  EXPECT_EQ(
      w4.status().message(),
      "auto: no tune table for cuda W=4 bf16 epilogue none (no table for cuda W=4 bf16 at any "
      "epilogue; measure one with `colltest tune --world 4 --dtype bf16` and put it in "
      "colltestd's --tune-dir)");
  EXPECT_THAT(
      TuneTables()
          .Resolve(Case("cuda", 2, v1::DTYPE_FP32, v1::MODE_GRAPH, 1, 8, v1::EPILOGUE_FP8_TOKEN))
          .status()
          .message(),
      HasSubstr("at any epilogue; measure one with `colltest tune --world 2 --dtype fp32 "
                "--epilogue fp8_token`"));
}

// keep_normed adds the same local store to every variant, so it only breaks a tie between tables
// that are otherwise as close (same mode, same distance in n); it is kept only with a quantising
// epilogue.
TEST(TuneTableTest, KeepNormedOnlyPrefersAMatchingTable) {
  const std::string kept = R"("epilogue": "nvfp4", "keep_normed": true, )";
  TuneTables tables(
      {*ParseTuneTable(Table(2, "graph", 7168, R"("epilogue": "nvfp4", )"), "plain.json"),
       *ParseTuneTable(Table(2, "graph", 7168, kept), "kept.json"),
       *ParseTuneTable(Table(2, "graph", 4096, R"("epilogue": "nvfp4", )"), "plain_4096.json")});
  auto pick = [&](bool keep_normed, uint32_t n) {
    return tables
        .Resolve(
            Case("cuda", 2, v1::DTYPE_BF16, v1::MODE_GRAPH, 1, n, v1::EPILOGUE_NVFP4, keep_normed))
        ->why;
  };
  EXPECT_THAT(pick(true, 7168), HasSubstr("kept.json (cuda W=2 bf16 graph n=7168 nvfp4 "
                                          "keep_normed)"));
  EXPECT_THAT(pick(false, 7168), HasSubstr("plain.json"));
  // The nearer n wins over the same keep_normed.
  EXPECT_THAT(pick(true, 4096), HasSubstr("plain_4096.json"));
  EXPECT_FALSE(ParseTuneTable(Table(2, "graph", 7168, R"("keep_normed": true, )"), "none.json")
                   ->keep_normed);
}

// A table measured with `colltest tune --tune-plugins` (docs/plugins.md): rows m=1 and m=512 of
// n=128 on the cpu, `us` in the order tune lists the kernels (colltest's own first).
std::string PluginTable(const std::string& best_1 = "plugin:oneshot_norm",
                        const std::string& us_1 = R"("one_stage": 9.0, "lamport": 7.0,
                                                     "two_kernel": 7.0, "plugin:oneshot_norm": 4.0)") {
  return R"({"kind": "colltest-tune-table", "version": 1, "backend": "cpu", "world": 2,
    "dtype": "bf16", "mode": "eager", "n": 128, "rows": [
      {"m": 1, "best": ")" +
         best_1 + R"(", "us": {)" + us_1 + R"(}},
      {"m": 512, "best": "one_stage",
       "us": {"one_stage": 20.0, "lamport": 40.0, "plugin:oneshot_norm": 60.0}}]})";
}

AutoCase PluginCase(uint32_t m, std::vector<std::string> plugins) {
  AutoCase c = Case("cpu", 2, v1::DTYPE_BF16, v1::MODE_EAGER, m, 128);
  c.plugins = std::move(plugins);
  return c;
}

TEST(TuneTableTest, APluginIsAKernelOfTheTableByItsName) {
  absl::StatusOr<TuneTable> t = ParseTuneTable(PluginTable(), "plugins.json");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->rows[0].best, TuneKernel::Plugin("oneshot_norm"));
  EXPECT_EQ(t->rows[0].best.Name(), "plugin:oneshot_norm");
  ASSERT_EQ(t->rows[0].us.size(), 4u);
  // The file's order: colltest's own variants first, as tune listed them.
  EXPECT_EQ(t->rows[0].us[0].first, v1::VARIANT_ONE_STAGE);
  EXPECT_EQ(t->rows[0].us[3].first, TuneKernel::Plugin("oneshot_norm"));
  EXPECT_EQ(t->rows[0].us[3].second, 4.0);
}

TEST(TuneTableTest, APluginNameOutsideTheRuleIsRefused) {
  const std::string long_name(33, 'a');
  for (const std::string& best :
       {std::string("plugin:Oneshot"), std::string("plugin:"), std::string("plugin:one-shot"),
        "plugin:" + long_name, std::string("plugin"), std::string("PLUGIN:oneshot_norm")}) {
    absl::StatusOr<TuneTable> t = ParseTuneTable(PluginTable(best), "bad.json");
    ASSERT_FALSE(t.ok()) << best;
    EXPECT_THAT(t.status().message(),
                HasSubstr("tune table bad.json: rows[m=1].best: not a variant that runs or "
                          "plugin:NAME (NAME 1 to 32 of a-z, 0-9 and _)"));
  }
  absl::StatusOr<TuneTable> t = ParseTuneTable(
      PluginTable("one_stage", R"("one_stage": 9.0, "plugin:Bad": 4.0)"), "bad.json");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("tune table bad.json: rows[m=1].us.plugin:Bad: must "
                                              "name a variant that runs or plugin:NAME"));
  // 32 characters is the longest name.
  EXPECT_TRUE(ParseTuneTable(PluginTable("plugin:" + long_name.substr(1)), "ok.json").ok());
}

TEST(TuneTableTest, ResolvesToALoadedPlugin) {
  TuneTables tables({*ParseTuneTable(PluginTable(), "plugins.json")});
  absl::StatusOr<AutoChoice> c = tables.Resolve(PluginCase(1, {"other", "oneshot_norm"}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kernel, TuneKernel::Plugin("oneshot_norm"));
  EXPECT_EQ(c->why,
            "plugin:oneshot_norm: tune table plugins.json (cpu W=2 bf16 eager n=128), row m=1 "
            "(256 B)");
}

// The table was measured where the plugin was loaded; a colltestd without it runs colltest's own
// fastest variant of the row instead, and says so.
TEST(TuneTableTest, APluginThatIsNotLoadedFallsBackToTheFastestOwnVariant) {
  TuneTables tables({*ParseTuneTable(PluginTable(), "plugins.json")});
  for (const std::vector<std::string>& loaded :
       {std::vector<std::string>{}, std::vector<std::string>{"other"}}) {
    absl::StatusOr<AutoChoice> c = tables.Resolve(PluginCase(1, loaded));
    ASSERT_TRUE(c.ok()) << c.status();
    // lamport and two_kernel tie at 7.0: the one listed first.
    EXPECT_EQ(c->kernel, v1::VARIANT_LAMPORT);
    EXPECT_EQ(c->why,
              "lamport: plugin:oneshot_norm of the table is not loaded, the fastest of colltest's "
              "own variants: tune table plugins.json (cpu W=2 bf16 eager n=128), row m=1 (256 B)");
  }
}

TEST(TuneTableTest, APluginThatIsNotLoadedWithNoOwnVariantMeasuredIsUnsupported) {
  TuneTables tables({*ParseTuneTable(
      PluginTable("plugin:oneshot_norm", R"("plugin:oneshot_norm": 4.0, "plugin:b": 5.0)"),
      "plugins.json")});
  absl::StatusOr<AutoChoice> c = tables.Resolve(PluginCase(1, {"b"}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.status().message(),
            "auto: plugin:oneshot_norm of the table is not loaded (colltestd --kernel-plugin) and "
            "tune table plugins.json (cpu W=2 bf16 eager n=128), row m=1 (256 B) measured none "
            "of colltest's own variants");
  // A row that names the plugin best without times: nothing to fall back on either.
  TuneTables untimed({*ParseTuneTable(PluginTable("plugin:oneshot_norm", ""), "plugins.json")});
  EXPECT_EQ(untimed.Resolve(PluginCase(1, {})).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// Between rows a plugin's time is interpolated as a variant's (4 us at m=1, 60 at m=512).
TEST(TuneTableTest, BetweenRowsAPluginIsInterpolatedAsAVariantIs) {
  TuneTables tables({*ParseTuneTable(PluginTable(), "plugins.json")});
  auto pick = [&](uint32_t m, std::vector<std::string> loaded) {
    return *tables.Resolve(PluginCase(m, std::move(loaded)));
  };
  // m=20: plugin 4 + 19/511 x 56 = 6.08 us, lamport 7 + 19/511 x 33 = 8.23, one_stage 9.41.
  EXPECT_EQ(pick(20, {"oneshot_norm"}).kernel, TuneKernel::Plugin("oneshot_norm"));
  EXPECT_THAT(pick(20, {"oneshot_norm"}).why,
              HasSubstr("plugin:oneshot_norm: tune table plugins.json (cpu W=2 bf16 eager "
                        "n=128), interpolated between rows m=1 and m=512 (6.08 us)"));
  // m=100: plugin 14.85, one_stage 11.13, lamport 13.39: the times crossed.
  EXPECT_EQ(pick(100, {"oneshot_norm"}).kernel, v1::VARIANT_ONE_STAGE);
  // Not loaded: the least interpolated time of colltest's own (two_kernel is not in row m=512).
  const AutoChoice fallback = pick(20, {});
  EXPECT_EQ(fallback.kernel, v1::VARIANT_LAMPORT);
  EXPECT_THAT(fallback.why, HasSubstr("lamport: plugin:oneshot_norm of the table is not loaded, "
                                      "the fastest of colltest's own variants: tune table "
                                      "plugins.json (cpu W=2 bf16 eager n=128), interpolated "
                                      "between rows m=1 and m=512 (8.23 us)"));
}

TEST(TuneTableTest, LoadsEveryJsonOfADirectoryAndRefusesABrokenOne) {
  const std::string dir = ::testing::TempDir() + "tune_table_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/a.json") << Table();
  std::ofstream(dir + "/notes.txt") << "not a table";
  // The long health level's figures share the directory and are not a table.
  std::ofstream(dir + "/" + kExpectedBusbwFileName) << R"({"NVIDIA H200": {"nvlink": 350}})";
  absl::StatusOr<TuneTables> loaded = TuneTables::LoadDir(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->tables().size(), 1u);
  std::ofstream(dir + "/b.json") << "{";
  loaded = TuneTables::LoadDir(dir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("b.json"));
  std::ofstream(dir + "/b.json") << Table(2, "graph", 7168, R"("epilogue": "fp8", )");
  loaded = TuneTables::LoadDir(dir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("b.json: epilogue: must be none, fp8_token, "
                                                   "fp8_tensor, nvfp4"));
  EXPECT_TRUE(TuneTables::LoadDir(dir + "/absent")->tables().empty());
  std::filesystem::remove_all(dir);
}

// The tables shipped in tune/ are what colltestd loads by default: a broken one would stop it.
TEST(TuneTableTest, TheCommittedTablesLoad) {
  absl::StatusOr<TuneTables> loaded = TuneTables::LoadDir(COLLTEST_SOURCE_TUNE_DIR);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE(loaded->tables().empty());
  EXPECT_TRUE(loaded->Resolve(Case("cuda", 2, v1::DTYPE_BF16, v1::MODE_GRAPH, 1, 7168)).ok());
}

}  // namespace
}  // namespace colltest::server
