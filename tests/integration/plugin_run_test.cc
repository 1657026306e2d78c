// Kernel plugins run through a real colltestd on the cpu backend (docs/plugins.md): selection by
// `--variants plugin:NAME`, the example plugin exact and timed in eager and graph mode, the wrong
// rank of a plugin that sums wrong, HANG naming every rank whose kernel never finished (and the
// rank a missing_rank fault kept from launching), the crash and the error naming the plugin and the
// call, graph refused without the capture flag, a shape the plugin refuses, history with the
// SHA-256, and `compare` of two builds exiting 4 when the second is slower.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/daemon.h"
#include "tests/integration/plugin_dir.h"

namespace colltest::testing {
namespace {

using Json = nlohmann::json;

// One colltestd with fault injection and the run-time fixtures, 4 cpu ranks.
class PluginRuns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new PluginDir();
    for (const char* f : {"oneshot_norm", "sums_wrong", "never_finishes", "crashes", "errors",
                          "no_graph", "refuses_shape"}) {
      dir_->Add(f, std::string(f) + ".so");
    }
    daemon_ = Daemon::Start(4, {"--allow-fault-injection", "--kernel-plugin-dir", dir_->path()})
                  .release();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    delete dir_;
  }
  void SetUp() override { ASSERT_NE(daemon_, nullptr); }

  // `colltest run ARGS --format json`: the exit code and the cases.
  static std::pair<int, Json> Run(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        BinDir() + "/colltest", "--server", daemon_->address(), "run", "--format", "json"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto [code, out] = RunCommand(argv);
    Json doc = Json::parse(out, nullptr, false);
    if (doc.is_discarded() || !doc.contains("cases")) {
      ADD_FAILURE() << "not a run document: " << out;
      return {code, Json::array()};
    }
    return {code, doc["cases"]};
  }
  static std::string Message(const Json& c) { return c["message"].get<std::string>(); }

  static PluginDir* dir_;
  static Daemon* daemon_;
};
PluginDir* PluginRuns::dir_ = nullptr;
Daemon* PluginRuns::daemon_ = nullptr;

TEST_F(PluginRuns, TheExampleIsExactAndTimedEagerAndGraphAtEveryWorld) {
  for (const char* world : {"2", "4"}) {
    auto [code, cases] = Run({"--world", world, "--m", "1,200", "--n", "128,1024", "--variants",
                              "plugin:oneshot_norm", "--modes", "eager,graph", "--pattern",
                              "neg_zero", "--iters", "5"});
    EXPECT_EQ(code, 0) << cases.dump();
    ASSERT_EQ(cases.size(), 8u);
    for (const Json& c : cases) {
      EXPECT_EQ(c["status"], "OK") << c.dump();
      EXPECT_EQ(c["variant"], "plugin:oneshot_norm");
      EXPECT_EQ(c["plugin"]["name"], "oneshot_norm");
      EXPECT_EQ(c["plugin"]["sha256"].get<std::string>().size(), 64u);
      EXPECT_GT(c["median_us"].get<double>(), 0) << c.dump();
    }
  }
}

TEST_F(PluginRuns, SelectionNamesAPluginThatIsNotLoaded) {
  auto [code, out] =
      RunCommand({BinDir() + "/colltest", "--server", daemon_->address(), "run", "--world", "2",
                  "--m", "1", "--n", "128", "--variants", "one_stage,plugin:nope"});
  EXPECT_EQ(code, 3) << out;
  EXPECT_NE(out.find("plugins[0] = \"nope\": no kernel plugin of that name is loaded (loaded: "),
            std::string::npos)
      << out;
  auto [bad_code, bad] = RunCommand({BinDir() + "/colltest", "--server", daemon_->address(), "run",
                                     "--variants", "plugin:Bad-Name"});
  EXPECT_NE(bad_code, 0);
  EXPECT_NE(bad.find("a plugin's name is 1 to 32 of a-z, 0-9 and _"), std::string::npos) << bad;
}

TEST_F(PluginRuns, ThePluginThatSumsWrongIsWrongOnRankOne) {
  auto [code, cases] = Run({"--world", "4", "--m", "3", "--n", "256", "--variants",
                            "plugin:sums_wrong,plugin:oneshot_norm", "--modes", "eager"});
  EXPECT_EQ(code, 1);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0]["status"], "WRONG") << cases[0].dump();
  EXPECT_EQ(Message(cases[0]).rfind("rank 1: ", 0), 0u) << Message(cases[0]);
  EXPECT_EQ(cases[0]["ranks"][1]["mismatches"], 1) << cases[0].dump();
  EXPECT_EQ(cases[0]["ranks"][0]["status"], "OK");
  EXPECT_EQ(cases[1]["status"], "OK") << cases[1].dump();
}

TEST_F(PluginRuns, AKernelThatNeverFinishesIsHangNamingEveryRankAndTheGroupComesBack) {
  auto [code, cases] = Run({"--world", "4", "--m", "8", "--n", "128", "--variants",
                            "plugin:never_finishes", "--modes", "eager", "--timeout", "1s"});
  EXPECT_EQ(code, 2);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0]["status"], "HANG") << cases[0].dump();
  const std::string m = Message(cases[0]);
  EXPECT_EQ(m.rfind("plugin:never_finishes launch (call 0) did not finish on rank 0: ", 0), 0u)
      << m;
  EXPECT_NE(m.find("(also ranks 1, 2, 3)"), std::string::npos) << m;
  // Killed and respawned: the next case runs.
  auto [next_code, next] = Run({"--world", "4", "--m", "8", "--n", "128", "--variants",
                                "plugin:oneshot_norm", "--modes", "eager"});
  EXPECT_EQ(next_code, 0) << next.dump();
}

TEST_F(PluginRuns, MissingRankIsTheRankThatNeverLaunched) {
  auto [code, cases] =
      Run({"--world", "4", "--m", "8", "--n", "128", "--variants", "plugin:oneshot_norm", "--modes",
           "eager", "--timeout", "1s", "--fault", "missing_rank:2"});
  EXPECT_EQ(code, 2);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0]["status"], "HANG");
  const std::string m = Message(cases[0]);
  EXPECT_NE(m.find("plugin:oneshot_norm launch (call 0) did not finish on rank 0"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("(also ranks 1, 3)"), std::string::npos) << m;
  EXPECT_NE(m.find("rank 2: fault injected: rank 2 never launched plugin:oneshot_norm"),
            std::string::npos)
      << m;
}

TEST_F(PluginRuns, OutsideFaultsReachThePlugin) {
  auto [delay_code, delayed] =
      Run({"--world", "2", "--m", "8", "--n", "128", "--variants", "plugin:oneshot_norm", "--modes",
           "eager", "--fault", "delay_rank:1:1000"});
  EXPECT_EQ(delay_code, 0) << delayed.dump();
  auto [crash_code, crashed] =
      Run({"--world", "4", "--m", "8", "--n", "128", "--variants", "plugin:oneshot_norm", "--modes",
           "eager", "--timeout", "1s", "--fault", "crash_rank:1"});
  EXPECT_EQ(crash_code, 3);
  ASSERT_EQ(crashed.size(), 1u);
  EXPECT_EQ(Message(crashed[0]).rfind("rank 1 (pid ", 0), 0u) << Message(crashed[0]);
  auto [stall_code, stalled] =
      Run({"--world", "4", "--m", "8", "--n", "128", "--variants", "plugin:oneshot_norm", "--modes",
           "eager", "--timeout", "1s", "--fault", "stall_rank:3"});
  EXPECT_EQ(stall_code, 2);
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_NE(Message(stalled[0]).find("rank 3 (pid "), std::string::npos) << Message(stalled[0]);
  EXPECT_NE(Message(stalled[0]).find("was outside plugin:oneshot_norm"), std::string::npos)
      << Message(stalled[0]);
  // colltest's planted protocol bugs are its own kernels': refused by name.
  auto [own_code, own] = Run({"--world", "2", "--m", "8", "--n", "128", "--variants",
                              "plugin:oneshot_norm", "--modes", "eager", "--fault", "skip_rearm"});
  EXPECT_EQ(own_code, 0);
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(own[0]["status"], "UNSUPPORTED");
  EXPECT_NE(Message(own[0]).find("takes missing_rank, delay_rank, crash_rank and stall_rank"),
            std::string::npos)
      << Message(own[0]);
}

TEST_F(PluginRuns, ACrashNamesThePluginAndTheCallAndAnErrorIsShownAsWritten) {
  auto [code, cases] = Run({"--world", "2", "--m", "8", "--n", "128", "--variants",
                            "plugin:crashes,plugin:errors", "--modes", "eager"});
  EXPECT_EQ(code, 3);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0]["status"], "ERROR");
  EXPECT_NE(Message(cases[0]).find("died in plugin:crashes launch (call 2): killed by signal 6"),
            std::string::npos)
      << Message(cases[0]);
  EXPECT_EQ(cases[1]["status"], "ERROR");
  EXPECT_NE(Message(cases[1]).find("plugin:errors launch (call 1): error: errors: launch failed "
                                   "on purpose at call 1"),
            std::string::npos)
      << Message(cases[1]);
}

TEST_F(PluginRuns, GraphIsRefusedWithoutTheCaptureFlagAndARefusedShapeIsUnsupported) {
  auto [code, cases] = Run({"--world", "2", "--m", "8,65", "--n", "128", "--variants",
                            "plugin:no_graph,plugin:refuses_shape", "--modes", "eager,graph"});
  EXPECT_EQ(code, 0);
  ASSERT_EQ(cases.size(), 8u);
  // m=8: no_graph eager OK, graph refused; refuses_shape both OK.
  EXPECT_EQ(cases[0]["status"], "OK") << cases[0].dump();
  EXPECT_EQ(cases[1]["status"], "UNSUPPORTED");
  EXPECT_NE(Message(cases[1]).find("plugin:no_graph does not allow graph capture"),
            std::string::npos)
      << Message(cases[1]);
  EXPECT_EQ(cases[2]["status"], "OK");
  EXPECT_EQ(cases[3]["status"], "OK");
  // m=65: refuses_shape says why, as it wrote it.
  EXPECT_EQ(cases[6]["status"], "UNSUPPORTED");
  EXPECT_NE(Message(cases[6]).find("plugin:refuses_shape launch (call 0): unsupported: "
                                   "refuses_shape: m=65 is above 64 rows"),
            std::string::npos)
      << Message(cases[6]);
  EXPECT_EQ(cases[6]["mismatches"], 0) << "a call that did not run is no wrong result";
}

// A health check runs a plugin beside its level's own variants, and its verdict is the plugin's.
TEST_F(PluginRuns, HealthChecksAPluginBesideItsLevelsVariants) {
  auto health = [](const std::string& plugin) {
    return RunCommand({BinDir() + "/colltest", "--server", daemon_->address(), "health",
                       "--devices", "0,1", "--variants", "plugin:" + plugin, "--format", "json"});
  };
  auto [ok_code, ok] = health("oneshot_norm");
  EXPECT_EQ(ok_code, 0) << ok;
  const Json cases = Json::parse(ok)["cases"];
  EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [](const Json& c) {
    return c["variant"] == "plugin:oneshot_norm" && c["status"] == "OK";
  })) << ok;
  auto [wrong_code, wrong] = health("sums_wrong");
  EXPECT_EQ(wrong_code, 1) << wrong;
  EXPECT_NE(Json::parse(wrong)["message"].get<std::string>().find("rank 1: plugin:sums_wrong"),
            std::string::npos)
      << wrong;
  auto [own_code, own] = RunCommand(
      {BinDir() + "/colltest", "--server", daemon_->address(), "health", "--variants", "lamport"});
  EXPECT_EQ(own_code, 3) << own;
  EXPECT_NE(own.find("it takes kernel plugins only (plugin:NAME)"), std::string::npos) << own;
}

// Two builds of one plugin, one after the other on one machine: history keeps each build's
// SHA-256, and `compare` is the regression check (exit 4, naming both builds).
TEST(PluginBuilds, HistoryKeepsTheShaAndCompareOfASlowerBuildExitsFour) {
  char state[] = "/tmp/colltest-plugin-builds-XXXXXX";
  ASSERT_NE(mkdtemp(state), nullptr);
  PluginDir dir;
  std::vector<std::string> runs;
  std::vector<std::string> shas;
  for (const char* build : {"oneshot_norm", "slow_oneshot"}) {
    dir.Add(build, "oneshot_norm.so");
    auto daemon = Daemon::Start(2, {"--state-dir", state, "--kernel-plugin-dir", dir.path()});
    ASSERT_NE(daemon, nullptr);
    auto [code, out] = RunCommand({BinDir() + "/colltest",
                                   "--server",
                                   daemon->address(),
                                   "run",
                                   "--world",
                                   "2",
                                   "--m",
                                   "16",
                                   "--n",
                                   "128",
                                   "--variants",
                                   "plugin:oneshot_norm",
                                   "--modes",
                                   "eager",
                                   "--iters",
                                   "10",
                                   "--warmup",
                                   "2",
                                   "--format",
                                   "json"});
    ASSERT_EQ(code, 0) << out;
    const Json run = Json::parse(out);
    runs.push_back(run["run_id"]);
    shas.push_back(run["cases"][0]["plugin"]["sha256"]);
  }
  EXPECT_NE(shas[0], shas[1]);
  auto daemon = Daemon::Start(2, {"--state-dir", state, "--kernel-plugin-dir", dir.path()});
  ASSERT_NE(daemon, nullptr);
  auto [get_code, got] = RunCommand(
      {BinDir() + "/colltest", "--server", daemon->address(), "get", runs[0], "--format", "json"});
  ASSERT_EQ(get_code, 0) << got;
  EXPECT_EQ(Json::parse(got)["cases"][0]["plugin"]["sha256"], shas[0]) << got;
  auto [code, out] = RunCommand({BinDir() + "/colltest", "--server", daemon->address(), "compare",
                                 runs[0], runs[1], "--format", "json"});
  EXPECT_EQ(code, 4) << out;
  const Json c = Json::parse(out)["cases"][0];
  EXPECT_EQ(c["verdict"], "REGRESSION") << c.dump();
  EXPECT_EQ(c["plugin_a"]["sha256"], shas[0]);
  EXPECT_EQ(c["plugin_b"]["version"], "1.1 (slow fixture)");
  EXPECT_NE(c["reason"].get<std::string>().find("plugin:oneshot_norm 1.0 (sha256 " +
                                                shas[0].substr(0, 12) + ") -> 1.1 (slow fixture)"),
            std::string::npos)
      << c.dump();
  daemon.reset();
  std::filesystem::remove_all(state);
}

// `auto` with a tune table of `colltest tune --tune-plugins` whose row names a plugin best: the
// case is the plugin's, resolved by colltestd before any worker sees `auto`. A colltestd that did
// not load the plugin runs the row's fastest own variant instead, and says why.
TEST(PluginAuto, AutoRunsThePluginTheTuneTableChoseOrItsOwnFastestWithoutIt) {
  char tune[] = "/tmp/colltest-plugin-tune-XXXXXX";
  ASSERT_NE(mkdtemp(tune), nullptr);
  std::ofstream(std::filesystem::path(tune) / "tune_cpu_w2_bf16_eager_n128.json")
      << R"({"kind": "colltest-tune-table", "version": 1, "backend": "cpu", "world": 2,
             "dtype": "bf16", "mode": "eager", "n": 128, "rows": [
               {"m": 1, "best": "plugin:oneshot_norm",
                "us": {"one_stage": 9.0, "plugin:oneshot_norm": 4.0}}]})";
  PluginDir with;
  with.Add("oneshot_norm", "oneshot_norm.so");
  PluginDir without;
  auto run_auto = [](const Daemon& daemon) {
    auto [code, out] = RunCommand({BinDir() + "/colltest", "--server", daemon.address(), "run",
                                   "--variants", "auto", "--world", "2", "--m", "1", "--n", "128",
                                   "--modes", "eager", "--iters", "5", "--format", "json"});
    EXPECT_EQ(code, 0) << out;
    const Json doc = Json::parse(out, nullptr, false);
    if (doc.is_discarded() || !doc.contains("cases") || doc["cases"].size() != 1) {
      ADD_FAILURE() << "not a run of one case: " << out;
      return Json::object();
    }
    return doc["cases"][0];
  };
  {
    auto daemon = Daemon::Start(2, {"--tune-dir", tune, "--kernel-plugin-dir", with.path()});
    ASSERT_NE(daemon, nullptr);
    const Json c = run_auto(*daemon);
    EXPECT_EQ(c["status"], "OK") << c.dump();
    EXPECT_EQ(c["variant"], "auto");
    EXPECT_EQ(c["resolved_variant"], "plugin:oneshot_norm") << c.dump();
    EXPECT_EQ(c["plugin"]["name"], "oneshot_norm") << c.dump();
    EXPECT_EQ(c["plugin"]["sha256"].get<std::string>().size(), 64u) << c.dump();
    EXPECT_EQ(c["message"].get<std::string>().rfind(
                  "auto -> plugin:oneshot_norm: tune table tune_cpu_w2_bf16_eager_n128.json (cpu "
                  "W=2 bf16 eager n=128), row m=1",
                  0),
              0u)
        << c.dump();
    EXPECT_GT(c["median_us"].get<double>(), 0) << c.dump();
  }
  {
    auto daemon = Daemon::Start(2, {"--tune-dir", tune, "--kernel-plugin-dir", without.path()});
    ASSERT_NE(daemon, nullptr);
    const Json c = run_auto(*daemon);
    EXPECT_EQ(c["status"], "OK") << c.dump();
    EXPECT_EQ(c["resolved_variant"], "one_stage") << c.dump();
    EXPECT_FALSE(c.contains("plugin")) << c.dump();
    EXPECT_NE(c["message"].get<std::string>().find(
                  "auto -> one_stage: plugin:oneshot_norm of the table is not loaded, the fastest "
                  "of colltest's own variants: tune table"),
              std::string::npos)
        << c.dump();
  }
  std::filesystem::remove_all(tune);
}

// The whole way: `colltest tune --tune-plugins` times the plugin beside colltest's own variant and
// writes a table naming it, which a colltestd loads and dispatches `auto` from; without
// --tune-plugins the plugin is refused before anything runs.
TEST_F(PluginRuns, TuneWithTunePluginsWritesATableThatAutoDispatchesFrom) {
  char out[] = "/tmp/colltest-plugin-tune-out-XXXXXX";
  ASSERT_NE(mkdtemp(out), nullptr);
  std::vector<std::string> tune = {BinDir() + "/colltest",
                                   "--server",
                                   daemon_->address(),
                                   "tune",
                                   "--world",
                                   "2",
                                   "--n",
                                   "128",
                                   "--m",
                                   "1,64",
                                   "--modes",
                                   "eager",
                                   "--variants",
                                   "one_stage,plugin:oneshot_norm",
                                   "--iters",
                                   "5",
                                   "--warmup",
                                   "1",
                                   "--format",
                                   "json",
                                   "--out",
                                   std::string(out) + "/table.json"};
  auto [refused_code, refused] = RunCommand(tune);
  EXPECT_EQ(refused_code, 3) << refused;
  EXPECT_NE(refused.find("--variants: 'plugin:oneshot_norm': auto picks a kernel plugin only when "
                         "asked: add --tune-plugins"),
            std::string::npos)
      << refused;
  tune.push_back("--tune-plugins");
  auto [code, text] = RunCommand(tune);
  ASSERT_EQ(code, 0) << text;
  const Json table = Json::parse(text);
  ASSERT_EQ(table["rows"].size(), 2u) << text;
  for (const Json& row : table["rows"]) {
    EXPECT_TRUE(row["us"].contains("one_stage")) << row.dump();
    EXPECT_TRUE(row["us"].contains("plugin:oneshot_norm")) << row.dump();
  }
  auto loaded = Daemon::Start(2, {"--tune-dir", out, "--kernel-plugin-dir", dir_->path()});
  ASSERT_NE(loaded, nullptr) << "the table must load";
  auto [run_code, run] = RunCommand({BinDir() + "/colltest", "--server", loaded->address(), "run",
                                     "--variants", "auto", "--world", "2", "--m", "1", "--n", "128",
                                     "--modes", "eager", "--format", "json"});
  EXPECT_EQ(run_code, 0) << run;
  const Json c = Json::parse(run)["cases"][0];
  EXPECT_EQ(c["status"], "OK") << c.dump();
  EXPECT_EQ(c["resolved_variant"], table["rows"][0]["best"]) << c.dump();
  loaded.reset();
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace colltest::testing
