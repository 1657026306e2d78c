// The colltest CLI against a real cpu-backend colltestd: exit codes, messages and the JSON
// contract.
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = Daemon::Start(8).release();
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
  static Daemon* daemon_;
};
Daemon* Cli::daemon_ = nullptr;

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

TEST_F(Cli, AcceptanceSweepAtWorldEightIsExact) {
  const auto t0 = std::chrono::steady_clock::now();
  auto [code, out] = Colltest({"sweep", "--world", "8", "--m", "1,64,257", "--n", "7168",
                               "--variants", "all", "--pattern", "integers", "--format", "json"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(code, 0) << out;
  // Progress goes to stderr, interleaved here: the JSON document is the part from the first '{'.
  const nlohmann::json doc = nlohmann::json::parse(out.substr(out.find("\n{") + 1));
  ASSERT_EQ(doc["cases"].size(), 3u * 6u);
  for (const auto& c : doc["cases"]) {
    const std::string v = c["variant"];
    if (v == "nccl" || v == "auto") {
      EXPECT_EQ(c["status"], "UNSUPPORTED") << c.dump();
    } else {
      EXPECT_EQ(c["status"], "OK") << c.dump();
      EXPECT_EQ(c["mismatches"], 0) << c.dump();
      EXPECT_EQ(c["ranks"].size(), 8u);
    }
    for (const char* key : {"variant", "mode", "world", "m", "n", "dtype", "pattern", "status",
                            "message", "median_us", "p10_us", "p90_us", "busbw_gbps", "mismatches",
                            "max_abs_err", "max_ulp", "ranks"}) {
      EXPECT_TRUE(c.contains(key)) << key;
    }
  }
  // Wall time is reported, not asserted: it is a measurement, not a property of the code.
  std::cout << "world 8 acceptance sweep: " << seconds << " s wall\n";
}

}  // namespace
}  // namespace colltest::testing
