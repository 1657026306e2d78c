#include "client/cli.h"

#include <cstdlib>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "client/app.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Parsed {
  std::variant<Invocation, int> result;
  std::string out;
  std::string err;
};

Parsed Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "colltest");
  std::ostringstream out, err;
  std::variant<Invocation, int> result = ParseCommandLine(args, out, err);
  return {std::move(result), out.str(), err.str()};
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("COLLTEST_SERVER"); }
  void TearDown() override { unsetenv("COLLTEST_SERVER"); }
};

TEST_F(CliTest, DefaultServer) {
  Parsed p = Parse({"devices"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
  const Invocation& inv = std::get<Invocation>(p.result);
  EXPECT_EQ(inv.command, "devices");
  EXPECT_EQ(inv.connection.server, "127.0.0.1:50051");
  EXPECT_EQ(inv.format, "table");
}

TEST_F(CliTest, ServerFromEnvironmentAndFlagWins) {
  setenv("COLLTEST_SERVER", "gpu-7:50051", 1);
  Parsed from_env = Parse({"devices"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(from_env.result)) << from_env.err;
  EXPECT_EQ(std::get<Invocation>(from_env.result).connection.server, "gpu-7:50051");

  Parsed from_flag = Parse({"--server", "gpu-8:1234", "devices"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(from_flag.result)) << from_flag.err;
  EXPECT_EQ(std::get<Invocation>(from_flag.result).connection.server, "gpu-8:1234");
}

TEST_F(CliTest, GlobalFlagsAlsoAfterTheCommand) {
  Parsed p = Parse(
      {"--token-file", "/t", "sweep", "--m", "1,8", "--tls-ca", "/ca.pem", "--server", "h:1"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
  const Invocation& inv = std::get<Invocation>(p.result);
  EXPECT_EQ(inv.command, "sweep");
  EXPECT_EQ(inv.connection.token_file, "/t");
  EXPECT_EQ(inv.connection.tls_ca, "/ca.pem");
  EXPECT_EQ(inv.connection.server, "h:1");
  EXPECT_EQ(inv.sweep.m, "1,8");
}

TEST_F(CliTest, RunFlagsAreKeptAsTyped) {
  Parsed p = Parse({"run",        "--world",       "4",       "--devices",   "0,1,2,3",
                    "--variants", "all",           "--modes", "eager,graph", "--timeout",
                    "500ms",      "--no-residual", "--fault", "delay:2",     "--grid-blocks",
                    "16",         "--label",       "a b",     "--format",    "junit",
                    "--out",      "/tmp/x.xml"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
  const Invocation& inv = std::get<Invocation>(p.result);
  EXPECT_EQ(inv.command, "run");
  EXPECT_EQ(inv.sweep.world, "4");
  EXPECT_EQ(inv.sweep.devices, "0,1,2,3");
  EXPECT_EQ(inv.sweep.variants, "all");
  EXPECT_EQ(inv.sweep.modes, "eager,graph");
  EXPECT_EQ(inv.sweep.timeout, "500ms");
  EXPECT_TRUE(inv.sweep.no_residual);
  EXPECT_EQ(inv.sweep.fault, "delay:2");
  EXPECT_EQ(inv.sweep.grid_blocks, "16");
  EXPECT_EQ(inv.sweep.label, "a b");
  EXPECT_FALSE(inv.sweep.m.has_value());
  EXPECT_EQ(inv.format, "junit");
  EXPECT_EQ(inv.out_path, "/tmp/x.xml");
}

TEST_F(CliTest, StopOnFailureOnRunAndSweep) {
  for (const char* command : {"run", "sweep"}) {
    Parsed p = Parse({command, "--stop-on-failure"});
    ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
    EXPECT_TRUE(std::get<Invocation>(p.result).sweep.stop_on_failure) << command;
  }
  Parsed unset = Parse({"run"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(unset.result)) << unset.err;
  EXPECT_FALSE(std::get<Invocation>(unset.result).sweep.stop_on_failure);
}

TEST_F(CliTest, HealthFlagsAreKeptAsTyped) {
  Parsed p = Parse({"--server", "gpu-3:50051", "health", "--pairs", "--timeout", "2s", "--devices",
                    "0,1", "--fault", "missing_rank:1", "--warn-ratio", "1.8", "--format", "junit",
                    "--out", "/tmp/h.xml"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
  const Invocation& inv = std::get<Invocation>(p.result);
  EXPECT_EQ(inv.command, "health");
  EXPECT_EQ(inv.connection.server, "gpu-3:50051");
  EXPECT_TRUE(inv.health.pairs);
  EXPECT_EQ(inv.health.timeout, "2s");
  EXPECT_EQ(inv.health.devices, "0,1");
  EXPECT_EQ(inv.health.fault, "missing_rank:1");
  EXPECT_EQ(inv.health.warn_ratio, "1.8");
  EXPECT_EQ(inv.format, "junit");
  EXPECT_EQ(inv.out_path, "/tmp/h.xml");
}

TEST_F(CliTest, HealthLevelForceAndMaxVerdictAgeAreKeptAsTyped) {
  Parsed p = Parse({"health", "--level", "Standard", "--force", "--max-verdict-age", "90s"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
  const Invocation& inv = std::get<Invocation>(p.result);
  EXPECT_EQ(inv.health.level, "Standard");
  EXPECT_TRUE(inv.health.force);
  EXPECT_EQ(inv.health.max_verdict_age, "90s");
}

TEST_F(CliTest, RunAndSweepTakeForce) {
  for (const char* command : {"run", "sweep"}) {
    Parsed p = Parse({command, "--force"});
    ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
    EXPECT_TRUE(std::get<Invocation>(p.result).sweep.force) << command;
  }
}

TEST_F(CliTest, HealthDefaults) {
  Parsed p = Parse({"health"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
  const Invocation& inv = std::get<Invocation>(p.result);
  EXPECT_FALSE(inv.health.pairs);
  EXPECT_FALSE(inv.health.timeout.has_value());
  EXPECT_FALSE(inv.health.warn_ratio.has_value());
  EXPECT_EQ(inv.format, "table");
}

TEST_F(CliTest, HealthDoesNotTakeSweepFlags) {
  Parsed p = Parse({"health", "--m", "64"});
  ASSERT_TRUE(std::holds_alternative<int>(p.result));
  EXPECT_EQ(std::get<int>(p.result), 3);
  EXPECT_THAT(p.err, HasSubstr("--m"));
}

TEST_F(CliTest, TuneFlagsAreKeptAsTyped) {
  Parsed p = Parse(
      {"tune",  "--world",    "2",       "--n",       "4096",       "--dtype",           "fp16",
       "--m",   "1,8",        "--modes", "eager",     "--variants", "lamport,one_stage", "--warmup",
       "3",     "--iters",    "9",       "--timeout", "1s",         "--format",          "json",
       "--out", "/tmp/t.json"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
  const Invocation& inv = std::get<Invocation>(p.result);
  EXPECT_EQ(inv.command, "tune");
  EXPECT_EQ(inv.tune.world, "2");
  EXPECT_EQ(inv.tune.n, "4096");
  EXPECT_EQ(inv.tune.dtype, "fp16");
  EXPECT_EQ(inv.tune.m, "1,8");
  EXPECT_EQ(inv.tune.modes, "eager");
  EXPECT_EQ(inv.tune.variants, "lamport,one_stage");
  EXPECT_EQ(inv.tune.warmup, "3");
  EXPECT_EQ(inv.tune.iters, "9");
  EXPECT_EQ(inv.tune.timeout, "1s");
  EXPECT_EQ(inv.format, "json");
  EXPECT_EQ(inv.out_path, "/tmp/t.json");
}

TEST_F(CliTest, TunePluginsIsASwitch) {
  Parsed p = Parse({"tune", "--world", "2", "--variants", "one_stage,plugin:x", "--tune-plugins"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
  EXPECT_TRUE(std::get<Invocation>(p.result).tune.tune_plugins);
  Parsed without = Parse({"tune", "--world", "2"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(without.result)) << without.err;
  EXPECT_FALSE(std::get<Invocation>(without.result).tune.tune_plugins);
}

TEST_F(CliTest, TuneFixesPatternAndTolerance) {
  for (const char* flag : {"--pattern", "--tolerance", "--stress"}) {
    Parsed p = Parse({"tune", "--world", "2", flag, "1"});
    ASSERT_TRUE(std::holds_alternative<int>(p.result)) << flag;
    EXPECT_EQ(std::get<int>(p.result), 3);
    EXPECT_THAT(p.err, HasSubstr(flag));
  }
}

TEST_F(CliTest, GetCancelAndRuns) {
  Parsed get = Parse({"get", "r-1", "--format", "json"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(get.result)) << get.err;
  EXPECT_EQ(std::get<Invocation>(get.result).run_id, "r-1");

  Parsed cancel = Parse({"cancel", "r-2"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(cancel.result)) << cancel.err;
  EXPECT_EQ(std::get<Invocation>(cancel.result).command, "cancel");
  EXPECT_EQ(std::get<Invocation>(cancel.result).run_id, "r-2");

  // `runs` is what `history` was called before it had filters.
  Parsed runs = Parse({"runs", "--limit", "5"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(runs.result)) << runs.err;
  EXPECT_EQ(std::get<Invocation>(runs.result).command, "history");
  EXPECT_EQ(std::get<Invocation>(runs.result).history.limit, "5");
}

TEST_F(CliTest, HistoryFlagsAreKeptAsTyped) {
  Parsed p =
      Parse({"history", "--label", "nightly", "--state", "done", "--since", "24h", "--variant",
             "lamport", "--limit", "20", "--page-token", "t-1", "--all", "--format", "csv"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(p.result)) << p.err;
  const Invocation& inv = std::get<Invocation>(p.result);
  EXPECT_EQ(inv.command, "history");
  EXPECT_EQ(inv.history.label, "nightly");
  EXPECT_EQ(inv.history.state, "done");
  EXPECT_EQ(inv.history.since, "24h");
  EXPECT_EQ(inv.history.variant, "lamport");
  EXPECT_EQ(inv.history.limit, "20");
  EXPECT_EQ(inv.history.page_token, "t-1");
  EXPECT_TRUE(inv.history.all);
  EXPECT_EQ(inv.format, "csv");

  Parsed plain = Parse({"history"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(plain.result)) << plain.err;
  EXPECT_FALSE(std::get<Invocation>(plain.result).history.all);
  EXPECT_FALSE(std::get<Invocation>(plain.result).history.since.has_value());
}

TEST_F(CliTest, BaselineSetAndList) {
  Parsed set = Parse({"baseline", "set", "r-7", "--name", "nightly", "--format", "json"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(set.result)) << set.err;
  EXPECT_EQ(std::get<Invocation>(set.result).command, "baseline set");
  EXPECT_EQ(std::get<Invocation>(set.result).run_id, "r-7");
  EXPECT_EQ(std::get<Invocation>(set.result).baseline_name, "nightly");
  EXPECT_EQ(std::get<Invocation>(set.result).format, "json");

  Parsed list = Parse({"baseline", "list", "--machine-key", "k1", "--server", "h:1"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(list.result)) << list.err;
  EXPECT_EQ(std::get<Invocation>(list.result).command, "baseline list");
  EXPECT_EQ(std::get<Invocation>(list.result).machine_key, "k1");
  EXPECT_EQ(std::get<Invocation>(list.result).connection.server, "h:1");

  for (std::vector<std::string> bad :
       {std::vector<std::string>{"baseline"}, {"baseline", "set"}, {"baseline", "drop", "x"}}) {
    Parsed p = Parse(bad);
    ASSERT_TRUE(std::holds_alternative<int>(p.result)) << bad.size();
    EXPECT_EQ(std::get<int>(p.result), 3);
  }
}

TEST_F(CliTest, CompareRunsBaselineAndThreshold) {
  Parsed two = Parse({"compare", "r-1", "r-2", "--threshold", "0.1", "--format", "junit"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(two.result)) << two.err;
  const Invocation& inv = std::get<Invocation>(two.result);
  EXPECT_EQ(inv.command, "compare");
  EXPECT_EQ(inv.compare.runs, (std::vector<std::string>{"r-1", "r-2"}));
  EXPECT_EQ(inv.compare.threshold, "0.1");
  EXPECT_FALSE(inv.compare.baseline.has_value());

  Parsed named = Parse({"compare", "r-2", "--baseline", "nightly"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(named.result)) << named.err;
  EXPECT_EQ(std::get<Invocation>(named.result).compare.runs, std::vector<std::string>{"r-2"});
  EXPECT_EQ(std::get<Invocation>(named.result).compare.baseline, "nightly");

  Parsed unnamed = Parse({"compare", "r-2", "--baseline"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(unnamed.result)) << unnamed.err;
  EXPECT_EQ(std::get<Invocation>(unnamed.result).compare.baseline, "");

  Parsed three = Parse({"compare", "r-1", "r-2", "r-3"});
  ASSERT_TRUE(std::holds_alternative<int>(three.result));
  EXPECT_EQ(std::get<int>(three.result), 3);
}

TEST_F(CliTest, RunAndSweepCompareBaselineWithOrWithoutAName) {
  Parsed bare = Parse({"run", "--compare-baseline", "--m", "1"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(bare.result)) << bare.err;
  EXPECT_EQ(std::get<Invocation>(bare.result).compare.baseline, "");
  EXPECT_EQ(std::get<Invocation>(bare.result).sweep.m, "1");

  Parsed named = Parse({"sweep", "--compare-baseline", "nightly", "--compare-threshold", "3%"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(named.result)) << named.err;
  EXPECT_EQ(std::get<Invocation>(named.result).compare.baseline, "nightly");
  EXPECT_EQ(std::get<Invocation>(named.result).compare.threshold, "3%");

  Parsed none = Parse({"run"});
  ASSERT_TRUE(std::holds_alternative<Invocation>(none.result)) << none.err;
  EXPECT_FALSE(std::get<Invocation>(none.result).compare.baseline.has_value());
}

TEST_F(CliTest, HelpNamesTheExitCodes) {
  Parsed p = Parse({"--help"});
  EXPECT_THAT(p.out, HasSubstr("history, runs"));
  EXPECT_THAT(p.out, HasSubstr("compare"));
  EXPECT_THAT(p.out, HasSubstr("  4  compare or --compare-baseline found a regression"));
  EXPECT_THAT(p.out, HasSubstr("  5  BUSY: the devices were in use and nothing was checked"));
  EXPECT_THAT(p.out, HasSubstr("  6  health --targets: some node unreachable"));
  Parsed sub = Parse({"run", "--help"});
  EXPECT_THAT(sub.out, HasSubstr("--compare-baseline [NAME]"));
}

TEST_F(CliTest, HelpSaysEveryDefault) {
  Parsed top = Parse({"--help"});
  EXPECT_THAT(top.out, HasSubstr("default 127.0.0.1:50051"));
  EXPECT_THAT(top.out, HasSubstr("COLLTEST_SERVER"));
  for (const char* command : {"run", "sweep"}) {
    Parsed p = Parse({command, "--help"});
    for (const char* text :
         {"(default 7168)", "(default bf16)", "(default 1:1024:x4, i.e. 1,4,16,64,256,1024)",
          "(default eager,graph)", "(default all, the variants the server's backend offers)",
          "(default: one per selected device", "(default normal)", "(default strict)",
          "(default 5s)", "--bytes RANGE", "--minbytes", "--maxbytes", "--stepfactor", "--wide"}) {
      EXPECT_THAT(p.out, HasSubstr(text)) << command;
    }
  }
  Parsed health = Parse({"health", "--help"});
  EXPECT_THAT(health.out, HasSubstr("quick|standard|long (default quick"));
}

TEST_F(CliTest, HelpIsSuccess) {
  Parsed p = Parse({"--help"});
  ASSERT_TRUE(std::holds_alternative<int>(p.result));
  EXPECT_EQ(std::get<int>(p.result), 0);
  EXPECT_THAT(p.out, HasSubstr("sweep"));

  Parsed sub = Parse({"sweep", "--help"});
  ASSERT_TRUE(std::holds_alternative<int>(sub.result));
  EXPECT_EQ(std::get<int>(sub.result), 0);
  EXPECT_THAT(sub.out, HasSubstr("--variants"));
}

TEST_F(CliTest, UnknownFlagIsExitThreeNamingIt) {
  Parsed p = Parse({"run", "--worlds", "4"});
  ASSERT_TRUE(std::holds_alternative<int>(p.result));
  EXPECT_EQ(std::get<int>(p.result), 3);
  EXPECT_THAT(p.err, StartsWith("colltest: "));
  EXPECT_THAT(p.err, HasSubstr("--worlds"));
}

TEST_F(CliTest, UnknownFlagSuggestsTheNearestFlagOfTheCommand) {
  Parsed p = Parse({"run", "--vriants", "lamport"});
  ASSERT_TRUE(std::holds_alternative<int>(p.result));
  EXPECT_EQ(std::get<int>(p.result), 3);
  EXPECT_THAT(p.err, HasSubstr("not expected"));
  EXPECT_THAT(p.err, HasSubstr("--vriants"));
  EXPECT_THAT(p.err, HasSubstr("did you mean --variants?"));
}

TEST_F(CliTest, UnknownFlagSuggestsAFlagOfThatCommandOrAGlobalOne) {
  // --wide is a flag of run, not of health; --server is global.
  Parsed health = Parse({"health", "--wid"});
  EXPECT_THAT(health.err, ::testing::Not(HasSubstr("did you mean --wide")));
  Parsed run = Parse({"run", "--wid"});
  EXPECT_THAT(run.err, HasSubstr("did you mean --wide?"));
  Parsed global = Parse({"devices", "--sever=h:1"});
  EXPECT_THAT(global.err, HasSubstr("did you mean --server?"));
  Parsed nested = Parse({"baseline", "list", "--machine-kye", "k"});
  EXPECT_THAT(nested.err, HasSubstr("did you mean --machine-key?"));
}

TEST_F(CliTest, UnknownCommandSuggestsTheNearestCommand) {
  Parsed p = Parse({"helth"});
  ASSERT_TRUE(std::holds_alternative<int>(p.result));
  EXPECT_EQ(std::get<int>(p.result), 3);
  EXPECT_THAT(p.err, HasSubstr("did you mean health?"));
  Parsed nested = Parse({"baseline", "lst"});
  EXPECT_THAT(nested.err, HasSubstr("did you mean list?"));
  Parsed far = Parse({"frobnicate"});
  EXPECT_THAT(far.err, ::testing::Not(HasSubstr("did you mean")));
}

TEST_F(CliTest, CommandIsRequired) {
  Parsed p = Parse({});
  ASSERT_TRUE(std::holds_alternative<int>(p.result));
  EXPECT_EQ(std::get<int>(p.result), 3);
}

TEST_F(CliTest, RemovedOrFutureCommandsAreNotAccepted) {
  Parsed p = Parse({"watch"});
  ASSERT_TRUE(std::holds_alternative<int>(p.result));
  EXPECT_EQ(std::get<int>(p.result), 3);
}

// RunCli rejects bad syntax before it connects anywhere: no server runs in these tests.
int Cli(std::vector<std::string> args, std::string* out, std::string* err) {
  args.insert(args.begin(), "colltest");
  std::ostringstream out_stream, err_stream;
  int code = RunCli(args, out_stream, err_stream);
  *out = out_stream.str();
  *err = err_stream.str();
  return code;
}

TEST_F(CliTest, BadListSyntaxIsExitThreeNamingTheFlag) {
  std::string out, err;
  EXPECT_EQ(Cli({"run", "--m", "abc"}, &out, &err), 3);
  EXPECT_THAT(err, StartsWith("colltest: INVALID_ARGUMENT: --m: cannot parse 'abc'"));
  EXPECT_EQ(out, "");
}

TEST_F(CliTest, UnknownVariantIsExitThreeNamingTheFlag) {
  std::string out, err;
  EXPECT_EQ(Cli({"sweep", "--variants", "lamport,turbo"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--variants: unknown variant 'turbo'"));
}

TEST_F(CliTest, BadFormatIsExitThree) {
  std::string out, err;
  EXPECT_EQ(Cli({"run", "--format", "yaml"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--format: cannot parse 'yaml'"));
  EXPECT_EQ(Cli({"devices", "--format", "junit"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--format: devices prints table or json"));
}

TEST_F(CliTest, TuneWithTwoModesIsExitThreeNamingModes) {
  std::string out, err;
  EXPECT_EQ(Cli({"tune", "--world", "2", "--modes", "eager,graph"}, &out, &err), 3);
  EXPECT_THAT(err, StartsWith("colltest: INVALID_ARGUMENT: --modes: 'eager,graph' names more "
                              "than one mode"));
  EXPECT_EQ(out, "");
}

TEST_F(CliTest, TuneWorldZeroOrMissingIsExitThreeNamingWorld) {
  std::string out, err;
  EXPECT_EQ(Cli({"tune", "--world", "0"}, &out, &err), 3);
  EXPECT_THAT(err, StartsWith("colltest: INVALID_ARGUMENT: --world: '0' is not a rank count"));
  EXPECT_EQ(Cli({"tune"}, &out, &err), 3);
  EXPECT_THAT(err, StartsWith("colltest: INVALID_ARGUMENT: --world: required"));
  EXPECT_EQ(out, "");
}

TEST_F(CliTest, TunePrintsTableOrJsonOnly) {
  std::string out, err;
  EXPECT_EQ(Cli({"tune", "--world", "2", "--format", "csv"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--format: tune prints table or json, not csv"));
}

TEST_F(CliTest, BadHealthTimeoutIsExitThreeNamingTheFlag) {
  std::string out, err;
  EXPECT_EQ(Cli({"health", "--timeout", "soon"}, &out, &err), 3);
  EXPECT_THAT(err, StartsWith("colltest: INVALID_ARGUMENT: --timeout: cannot parse 'soon'"));
  EXPECT_EQ(out, "");
}

TEST_F(CliTest, WarnRatioNotAboveOneIsExitThreeNamingTheFlag) {
  std::string out, err;
  EXPECT_EQ(Cli({"health", "--warn-ratio", "1"}, &out, &err), 3);
  EXPECT_THAT(err, StartsWith("colltest: INVALID_ARGUMENT: --warn-ratio: '1' is not above 1"));
  EXPECT_EQ(Cli({"health", "--warn-ratio", "0.9"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--warn-ratio: '0.9' is not above 1"));
}

TEST_F(CliTest, BadLevelIsExitThreeNamingTheFlagAndTheChoices) {
  std::string out, err;
  EXPECT_EQ(Cli({"health", "--level", "thorough"}, &out, &err), 3);
  EXPECT_EQ(err,
            "colltest: INVALID_ARGUMENT: --level: cannot parse 'thorough': expected quick, "
            "standard or long\n");
}

TEST_F(CliTest, BadHealthFormatIsExitThree) {
  std::string out, err;
  EXPECT_EQ(Cli({"health", "--format", "yaml"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--format: cannot parse 'yaml'"));
}

TEST_F(CliTest, EveryBadRunFlagIsReportedAtOnceBeforeConnecting) {
  std::string out, err;
  EXPECT_EQ(Cli({"run", "--m", "abc", "--dtype", "fp8", "--variants", "lampor", "--modes", "lazy"},
                &out, &err),
            3);
  EXPECT_THAT(err, StartsWith("colltest: INVALID_ARGUMENT: --m: cannot parse 'abc'"));
  EXPECT_THAT(err, HasSubstr("\n--dtype: cannot parse 'fp8': expected bf16, fp16 or fp32 "
                             "(nccl-tests: bfloat16, half or float); did you mean 'fp16'?\n"));
  EXPECT_THAT(err, HasSubstr("\n--variants: unknown variant 'lampor'"));
  EXPECT_THAT(err, HasSubstr("did you mean 'lamport'?\n"));
  EXPECT_THAT(err, HasSubstr("\n--modes: unknown mode 'lazy'"));
  EXPECT_EQ(out, "");
}

TEST_F(CliTest, EveryBadHealthFlagIsReportedAtOnce) {
  std::string out, err;
  EXPECT_EQ(Cli({"health", "--timeout", "soon", "--level", "quik"}, &out, &err), 3);
  EXPECT_THAT(err, StartsWith("colltest: INVALID_ARGUMENT: --timeout: cannot parse 'soon'"));
  EXPECT_THAT(err, HasSubstr("\n--level: cannot parse 'quik': expected quick, standard or long; "
                             "did you mean 'quick'?\n"));
}

TEST_F(CliTest, FormatStateAndNpdNamesGetDidYouMean) {
  std::string out, err;
  EXPECT_EQ(Cli({"run", "--format", "jsn"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--format: cannot parse 'jsn'"));
  EXPECT_THAT(err, HasSubstr("did you mean 'json'?"));
  EXPECT_EQ(Cli({"history", "--state", "don", "--since", "2026"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--state: unknown state 'don'"));
  EXPECT_THAT(err, HasSubstr("did you mean 'done'?"));
  EXPECT_EQ(Cli({"history", "--variant", "lamprot"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("did you mean 'lamport'?"));
  EXPECT_EQ(Cli({"health", "--npd", "collectivehang"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--npd: unknown condition"));
  EXPECT_THAT(err, HasSubstr("did you mean 'CollectiveHang'?"));
}

TEST_F(CliTest, DefaultVariantsAskTheServerAndItsFailureIsExitThree) {
  // Nothing listens on port 1: ListDevices, asked first for the variants, fails.
  std::string out, err;
  EXPECT_EQ(Cli({"--server", "127.0.0.1:1", "run", "--m", "1"}, &out, &err), 3);
  EXPECT_THAT(err, StartsWith("colltest: UNAVAILABLE: "));
  EXPECT_EQ(out, "");
}

TEST_F(CliTest, HistoryRefusesJunitAndBadFiltersBeforeConnecting) {
  std::string out, err;
  EXPECT_EQ(Cli({"history", "--format", "junit"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--format: history prints table, json or csv, not junit"));
  EXPECT_EQ(Cli({"history", "--since", "2026"}, &out, &err), 3);
  EXPECT_THAT(err, StartsWith("colltest: INVALID_ARGUMENT: --since: cannot parse '2026'"));
  EXPECT_EQ(Cli({"history", "--state", "finished"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--state: unknown state 'finished'"));
  EXPECT_EQ(Cli({"baseline", "list", "--format", "csv"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--format: baseline prints table or json, not csv"));
}

TEST_F(CliTest, CompareBadArgumentsAreExitThreeBeforeConnecting) {
  std::string out, err;
  EXPECT_EQ(Cli({"compare", "r-1"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("compare: name two runs"));
  EXPECT_EQ(Cli({"compare", "r-1", "r-2", "--baseline"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("with --baseline, name one run"));
  EXPECT_EQ(Cli({"compare", "r-1", "r-2", "--threshold", "5"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--threshold: '5' would be 500 %"));
}

TEST_F(CliTest, CompareBaselineRefusesCsvAndAStrayThreshold) {
  std::string out, err;
  EXPECT_EQ(Cli({"run", "--compare-baseline", "--format", "csv"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--compare-baseline: prints table, json or junit, not csv"));
  EXPECT_EQ(Cli({"sweep", "--compare-threshold", "0.1"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--compare-threshold: only with --compare-baseline"));
  EXPECT_EQ(out, "");
}

TEST_F(CliTest, BadLimitIsExitThree) {
  std::string out, err;
  EXPECT_EQ(Cli({"runs", "--limit", "ten"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--limit: cannot parse 'ten'"));
}

TEST_F(CliTest, MissingTokenFileIsExitThreeNamingTheFlag) {
  std::string out, err;
  EXPECT_EQ(Cli({"--token-file", "/nonexistent/token", "devices"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--token-file: cannot read '/nonexistent/token'"));
}

TEST_F(CliTest, MissingCaFileIsExitThreeNamingTheFlag) {
  std::string out, err;
  EXPECT_EQ(Cli({"--tls-ca", "/nonexistent/ca.pem", "devices"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("--tls-ca: cannot read '/nonexistent/ca.pem'"));
}

}  // namespace
}  // namespace colltest::client
