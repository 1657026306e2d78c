// The colltest CLI against a real cpu-backend colltestd: exit codes, messages and the JSON
// contract.
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

// The CLI against one cpu colltestd of kRanks ranks, shared by the tests of a suite.
template <int kRanks>
class CliAgainstRanks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = Daemon::Start(kRanks).release();
    ASSERT_NE(daemon_, nullptr);
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  std::pair<int, std::string> Colltest(std::vector<std::string> args) {
    args.insert(args.begin(), {BinDir() + "/colltest", "--server", daemon_->address()});
    return RunCommand(args);
  }
  static inline Daemon* daemon_ = nullptr;
};

using Cli = CliAgainstRanks<8>;

TEST_F(Cli, InvalidFieldsExitThreeNamingTheField) {
  struct Bad {
    std::vector<std::string> flags;
    std::string field;
  };
  for (const Bad& b :
       {Bad{{"--n", "7"}, "n"}, Bad{{"--m", "0"}, "m"}, Bad{{"--world", "64"}, "world_size"}}) {
    std::vector<std::string> args = {"run", "--world", "2", "--m", "4", "--n", "128"};
    // Replace the valid value of the flag under test.
    for (size_t i = 1; i + 1 < args.size(); i += 2) {
      if (args[i] == b.flags[0]) args[i + 1] = b.flags[1];
    }
    auto [code, out] = Colltest(args);
    EXPECT_EQ(code, 3) << out;
    EXPECT_NE(out.find("INVALID_ARGUMENT"), std::string::npos) << out;
    EXPECT_NE(out.find(b.field + " = " + b.flags[1]), std::string::npos)
        << "does not name " << b.field << ": " << out;
  }
  // The server keeps serving.
  auto [code, out] =
      Colltest({"run", "--world", "2", "--m", "4", "--n", "128", "--variants", "lamport"});
  EXPECT_EQ(code, 0) << out;
}

// nccl-tests' short flags reach colltestd with nccl-tests' meanings: -n timed calls, -w warm-up,
// -d the dtype by nccl-tests' name; --hidden the hidden size; -c 0 is refused before connecting.
TEST_F(Cli, NcclTestsShortFlagsReachTheServer) {
  auto [code, out] =
      Colltest({"run",        "--world", "2",       "--m",   "4",  "--hidden", "128",
                "--variants", "lamport", "--modes", "eager", "-n", "7",        "-w",
                "1",          "-d",      "half",    "-c",    "1",  "--format", "json"});
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json doc = nlohmann::json::parse(out.substr(out.find('{')));
  ASSERT_EQ(doc["cases"].size(), 1u) << out;
  const nlohmann::json& c = doc["cases"][0];
  EXPECT_EQ(c["samples"], 7) << c.dump();
  EXPECT_EQ(c["dtype"], "fp16") << c.dump();
  EXPECT_EQ(c["n"], 128) << c.dump();

  auto [refused, message] = Colltest({"run", "--world", "2", "--m", "4", "-c", "0"});
  EXPECT_EQ(refused, 3) << message;
  EXPECT_NE(message.find("--check: '0': colltest has no unchecked case"), std::string::npos)
      << message;
}

TEST_F(Cli, AcceptanceSweepAtWorldEightIsExact) {
  const auto t0 = std::chrono::steady_clock::now();
  // `all` is every variant the cpu backend offers: no UNSUPPORTED nccl or auto rows. The default
  // timeout: 8 ranks on 2 busy cores run lamport_tb at m = 257 for longer than a fixed host
  // deadline allowed (a false HANG in CI); the host deadline measures progress now
  // (server/workers/case_deadline.h), and ranks that wait yield, then sleep.
  auto [code, out] = Colltest({"sweep", "--world", "8", "--m", "1,64,257", "--n", "7168",
                               "--variants", "all", "--modes", "eager", "--pattern", "integers",
                               "--format", "json"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json doc = nlohmann::json::parse(out.substr(out.find("\n{") + 1));
  ASSERT_EQ(doc["cases"].size(), 3u * 5u);
  for (const auto& c : doc["cases"]) {
    EXPECT_EQ(c["status"], "OK") << c.dump();
    EXPECT_EQ(c["mismatches"], 0) << c.dump();
    EXPECT_EQ(c["ranks"].size(), 8u);
    for (const char* key : {"variant", "mode", "world", "m", "n", "dtype", "pattern", "status",
                            "message", "median_us", "p10_us", "p90_us", "busbw_gbps", "mismatches",
                            "max_abs_err", "max_ulp", "ranks"}) {
      EXPECT_TRUE(c.contains(key)) << key;
    }
  }
  // Wall time is reported, not asserted: it is a measurement, not a property of the code.
  std::cout << "world 8 acceptance sweep: " << seconds << " s wall\n";
}

// `colltest run` with neither --variants nor --modes nor --dtype nor --world, against a cpu
// colltestd of 2 ranks: the client's defaults, and the variants the server lists (one ListDevices
// first).
using CliDefaults = CliAgainstRanks<2>;

TEST_F(CliDefaults, RunsTheServersVariantsInBothModesOnEveryRank) {
  auto [devices_code, devices_out] = Colltest({"devices", "--format", "json"});
  ASSERT_EQ(devices_code, 0) << devices_out;
  const nlohmann::json offered = nlohmann::json::parse(devices_out)["variants"];
  ASSERT_FALSE(offered.empty());

  auto [code, out] = Colltest({"run", "--m", "1", "--n", "1024", "--format", "json"});
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json doc = nlohmann::json::parse(out);
  std::set<std::pair<std::string, std::string>> seen;  // (variant, mode)
  for (const auto& c : doc["cases"]) {
    EXPECT_EQ(c["status"], "OK") << c.dump();
    EXPECT_EQ(c["world"], 2) << c.dump();
    EXPECT_EQ(c["dtype"], "bf16") << c.dump();
    EXPECT_EQ(c["m"], 1) << c.dump();
    EXPECT_EQ(c["n"], 1024) << c.dump();
    seen.emplace(c["variant"], c["mode"]);
  }
  std::set<std::pair<std::string, std::string>> expected;
  for (const auto& variant : offered) {
    for (const char* mode : {"eager", "graph"}) expected.emplace(variant, mode);
  }
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(doc["cases"].size(), expected.size());
}

TEST_F(CliDefaults, EveryBadFlagIsReportedAtOnceAndTheServerToo) {
  // The client's own checks: every flag at once, with a hint.
  auto [code, out] = Colltest({"run", "--m", "x", "--variants", "lampor", "--dtype", "bf61"});
  EXPECT_EQ(code, 3) << out;
  EXPECT_NE(out.find("--m: cannot parse 'x'"), std::string::npos) << out;
  EXPECT_NE(out.find("did you mean 'lamport'?"), std::string::npos) << out;
  EXPECT_NE(out.find("did you mean 'bf16'?"), std::string::npos) << out;
  // The server's: every field at once.
  auto [server_code, server_out] =
      Colltest({"run", "--m", "0", "--n", "7", "--world", "3", "--iters", "1000000"});
  EXPECT_EQ(server_code, 3) << server_out;
  for (const char* part : {"world_size = 3", "m = 0", "n = 7", "iters = 1000000"}) {
    EXPECT_NE(server_out.find(part), std::string::npos) << part << " in " << server_out;
  }
}

}  // namespace
}  // namespace colltest::testing
