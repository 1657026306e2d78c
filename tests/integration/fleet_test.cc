// The fleet check (`colltest health --targets`) against real colltestd on loopback: two healthy
// nodes, one whose rank 1 never arrives (a missing rank injected from the node's own environment,
// COLLTEST_TEST_FAULT, since the fleet sends one request to every node; only the test build of the
// worker, colltest-worker-breaks, reads it), one behind a token, one stopped (its port refuses),
// and a socket that accepts TCP but never speaks HTTP/2. Every daemon is stopped by its Daemon's
// destructor, the socket closed by its owner.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kToken[] = "fleet-runner-token-000000001";

// A loopback port that completes TCP handshakes (the kernel does, from the backlog) and never
// answers: what a hung process or a wrong service on a node's port looks like to gRPC.
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof(addr);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), size) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &size) != 0) {
      return;
    }
    address_ = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
  }
  ~SilentListener() { close(fd_); }
  const std::string& address() const { return address_; }

 private:
  int fd_ = -1;
  std::string address_;
};

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class FleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    healthy_a_ = Daemon::Start(2);
    healthy_b_ = Daemon::Start(2);
    // Rank 1 (device 1) never arrives in any case of this node: a HANG naming device 1.
    hang_ =
        Daemon::Start(2, {"--worker", BreaksWorkerPath()}, {"COLLTEST_TEST_FAULT=missing_rank:1"});
    const std::string tokens =
        WriteTokenFile("fleet_server_tokens", absl::StrCat("fleet runner ", kToken, "\n"));
    token_ = Daemon::Start(2, {"--token-file", tokens});
    stopped_ = Daemon::Start(2);
    ASSERT_TRUE(healthy_a_ && healthy_b_ && hang_ && token_ && stopped_);
    stopped_->Kill();
    client_token_ = WriteTokenFile("fleet_client_token", absl::StrCat(kToken, "\n"));
    out_path_ = ::testing::TempDir() + "/fleet_report";
  }

  void TearDown() override { std::remove(out_path_.c_str()); }

  // Runs `colltest health` with `args`, the report going to out_path_; returns the exit code and
  // keeps stdout + stderr in output_ and the run's seconds in seconds_.
  int Health(std::vector<std::string> args) {
    args.insert(args.begin(), {BinDir() + "/colltest", "health", "--out", out_path_});
    const auto t0 = std::chrono::steady_clock::now();
    auto [code, output] = RunCommand(args);
    seconds_ = SecondsSince(t0);
    output_ = output;
    return code;
  }

  std::string Report() const {
    std::ifstream in(out_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // The JSON report's rows by node name.
  std::map<std::string, nlohmann::json> Rows(const nlohmann::json& report) const {
    std::map<std::string, nlohmann::json> rows;
    for (const nlohmann::json& node : report["nodes"]) rows[node["node"]] = node;
    return rows;
  }

  std::unique_ptr<Daemon> healthy_a_, healthy_b_, hang_, token_, stopped_;
  std::string client_token_;
  std::string out_path_;
  std::string output_;
  double seconds_ = 0;
};

TEST_F(FleetTest, EveryNodeGetsItsRowAndTheWorstSetsTheExitCode) {
  const std::vector<std::string> nodes = {healthy_a_->address(), healthy_b_->address(),
                                          hang_->address(), token_->address(), stopped_->address()};
  const int code = Health({"--targets", absl::StrJoin(nodes, ","), "--format", "json"});
  std::printf("[ fleet ] 5 nodes, no token: exit %d in %.2f s\n%s", code, seconds_,
              output_.c_str());
  // UNAUTHENTICATED (3) outranks HANG (2) and UNREACHABLE (6).
  EXPECT_EQ(code, 3) << output_;
  EXPECT_THAT(output_, HasSubstr(absl::StrCat("1 UNREACHABLE (", stopped_->address(), ")")));
  const nlohmann::json report = nlohmann::json::parse(Report());
  ASSERT_EQ(report["nodes"].size(), 5u);
  // Rows keep the order of the list.
  for (size_t i = 0; i < nodes.size(); ++i) EXPECT_EQ(report["nodes"][i]["node"], nodes[i]);
  std::map<std::string, nlohmann::json> rows = Rows(report);
  EXPECT_EQ(rows[healthy_a_->address()]["verdict"], "OK") << rows[healthy_a_->address()];
  EXPECT_EQ(rows[healthy_b_->address()]["verdict"], "OK") << rows[healthy_b_->address()];
  EXPECT_FALSE(rows[healthy_a_->address()]["hostname"].get<std::string>().empty());
  const nlohmann::json& hang = rows[hang_->address()];
  EXPECT_EQ(hang["verdict"], "HANG") << hang;
  EXPECT_THAT(hang["message"].get<std::string>(), HasSubstr("rank 1"));
  ASSERT_EQ(hang["culprit"].size(), 1u) << hang;
  EXPECT_EQ(hang["culprit"][0]["device"], 1) << hang;
  EXPECT_THAT(hang["culprit"][0]["uuid"].get<std::string>(), HasSubstr("cpu-")) << hang;
  EXPECT_EQ(rows[token_->address()]["verdict"], "UNAUTHENTICATED") << rows[token_->address()];
  EXPECT_EQ(rows[token_->address()]["attempts"], 1) << "a refusal is not retried";
  const nlohmann::json& stopped = rows[stopped_->address()];
  EXPECT_EQ(stopped["verdict"], "UNREACHABLE") << stopped;
  EXPECT_EQ(stopped["attempts"], 3) << "1 + the default 2 retries";
  EXPECT_THAT(stopped["message"].get<std::string>(), HasSubstr("UNAVAILABLE"));
  const nlohmann::json& s = report["summary"];
  EXPECT_EQ(s["nodes"], 5);
  EXPECT_EQ(s["ok"], 2);
  EXPECT_EQ(s["wrong"], 0);
  EXPECT_EQ(s["unauthenticated"], 1);
  EXPECT_EQ(s["unreachable"], 1);
  EXPECT_EQ(s["hang"], 1);
  EXPECT_EQ(s["error"], 0);
  EXPECT_EQ(s["busy"], 0);
  EXPECT_EQ(s["exit_code"], 3);
  EXPECT_GT(s["wall_ms"].get<double>(), 0.0);
}

TEST_F(FleetTest, WithTheTokenOnlyTheStoppedNodeIsMissingAndJunitHasACasePerNode) {
  const std::vector<std::string> nodes = {healthy_a_->address(), healthy_b_->address(),
                                          token_->address(), stopped_->address()};
  const std::string list = ::testing::TempDir() + "/fleet_targets";
  std::ofstream(list) << "# the fleet of the test\n"
                      << absl::StrJoin(nodes, "  # a node\n") << "\n\n";
  const int code = Health({"--token-file", client_token_, "--targets-file", list, "--format",
                           "junit", "--retries", "1"});
  std::printf("[ fleet ] 4 nodes with the token: exit %d in %.2f s\n%s", code, seconds_,
              output_.c_str());
  // Only an unreachable node, and nothing worse: 6.
  EXPECT_EQ(code, 6) << output_;
  EXPECT_THAT(output_, HasSubstr(absl::StrCat("fleet: 4 nodes in ")));
  EXPECT_THAT(output_, HasSubstr(absl::StrCat("3 OK, 1 UNREACHABLE (", stopped_->address(), ")")));
  const std::string xml = Report();
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"colltest.fleet\" tests=\"4\" failures=\"0\" "
                             "errors=\"1\" skipped=\"0\""));
  for (const std::string& node : nodes) {
    EXPECT_THAT(
        xml, HasSubstr(absl::StrCat("<testcase classname=\"colltest.fleet\" name=\"", node, "\"")));
  }
  EXPECT_THAT(xml, HasSubstr("<error type=\"UNREACHABLE\""));
  std::remove(list.c_str());
}

TEST_F(FleetTest, ANodeThatNeverAnswersIsCutAtTheNodeTimeout) {
  SilentListener silent;
  ASSERT_FALSE(silent.address().empty());
  const int code = Health({"--targets", absl::StrCat(silent.address(), ",", healthy_a_->address()),
                           "--node-timeout", "3s", "--retries", "1", "--format", "json"});
  std::printf("[ fleet ] a silent node with --node-timeout 3s --retries 1: exit %d in %.2f s\n",
              code, seconds_);
  EXPECT_EQ(code, 6) << output_;
  // Two attempts of 3 s and one pause of 250 ms, plus the start of the client.
  EXPECT_LT(seconds_, 2 * 3.0 + 0.25 + 3.0) << output_;
  std::map<std::string, nlohmann::json> rows = Rows(nlohmann::json::parse(Report()));
  const nlohmann::json& silent_row = rows[silent.address()];
  EXPECT_EQ(silent_row["verdict"], "UNREACHABLE") << silent_row;
  EXPECT_EQ(silent_row["attempts"], 2);
  EXPECT_THAT(silent_row["message"].get<std::string>(), HasSubstr("no connection within 3s"));
  EXPECT_GE(silent_row["duration_ms"].get<double>(), 6000.0);
  // The healthy node did not wait for the silent one.
  const nlohmann::json& healthy = rows[healthy_a_->address()];
  EXPECT_EQ(healthy["verdict"], "OK") << healthy;
  EXPECT_LT(healthy["duration_ms"].get<double>(), 3000.0);
}

}  // namespace
}  // namespace colltest::testing
