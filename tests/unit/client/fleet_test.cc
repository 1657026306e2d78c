// The fleet check's rules without a network: what each answer or failure makes of a node, the
// exit code over the nodes, and the runner's bounds (parallelism, retries, a slow node).
#include "client/fleet/fleet.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/app.h"
#include "client/commands/exit_code.h"
#include "client/fleet/fleet_verdict.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1800000000);

v1::HealthTarget Target(std::vector<uint32_t> devices, v1::CaseStatus status, int suspect = -1) {
  v1::HealthTarget t;
  t.mutable_devices()->Add(devices.begin(), devices.end());
  t.set_status(status);
  t.set_suspect_peer(suspect);
  return t;
}

// Three devices with UUIDs "uuid-0".. "uuid-2" on host "node7".
v1::HealthResponse Answer(v1::CaseStatus status, const std::string& message) {
  v1::HealthResponse h;
  h.set_status(status);
  h.set_message(message);
  h.mutable_machine()->set_hostname("node7");
  for (uint32_t d = 0; d < 3; ++d) {
    v1::Device* device = h.mutable_machine()->add_devices();
    device->set_index(d);
    device->set_uuid(absl::StrCat("uuid-", d));
  }
  h.set_verdict_unix_ms(absl::ToUnixMillis(kNow - absl::Seconds(45)));
  return h;
}

NodeReport Apply(const v1::HealthResponse& h) {
  NodeReport report;
  ApplyHealthAnswer(h, kNow, &report);
  return report;
}

TEST(FleetVerdictTest, HealthyAndSlowNodes) {
  v1::HealthResponse ok = Answer(v1::CASE_STATUS_OK, "healthy: 3 ranks");
  *ok.add_ranks() = Target({0}, v1::CASE_STATUS_OK);
  NodeReport report = Apply(ok);
  EXPECT_EQ(report.verdict, NodeVerdict::kOk);
  EXPECT_TRUE(report.culprit.empty());
  EXPECT_EQ(report.hostname, "node7");
  EXPECT_EQ(report.message, "healthy: 3 ranks");

  v1::HealthTarget slow = Target({1, 2}, v1::CASE_STATUS_OK);
  slow.set_slow(true);
  *ok.add_pairs() = slow;
  report = Apply(ok);
  EXPECT_EQ(report.verdict, NodeVerdict::kWarn);
  EXPECT_EQ(CulpritText(report.culprit), "devices 1 (uuid-1), 2 (uuid-2)");
}

TEST(FleetVerdictTest, AHangNamesTheDeviceWaitedFor) {
  v1::HealthResponse h = Answer(v1::CASE_STATUS_HANG, "HANG: rank 1 never arrived");
  *h.add_ranks() = Target({0}, v1::CASE_STATUS_HANG, 1);
  *h.add_ranks() = Target({1}, v1::CASE_STATUS_OK, 0);  // suspect 0 on an OK rank accuses no one
  *h.add_ranks() = Target({2}, v1::CASE_STATUS_HANG, 1);
  const NodeReport report = Apply(h);
  EXPECT_EQ(report.verdict, NodeVerdict::kHang);
  ASSERT_EQ(report.culprit.size(), 1u);
  EXPECT_EQ(report.culprit[0].index, 1u);
  EXPECT_EQ(report.culprit[0].uuid, "uuid-1");
}

TEST(FleetVerdictTest, WrongPairsIsolateTheirCommonDevice) {
  v1::HealthResponse h = Answer(v1::CASE_STATUS_WRONG, "WRONG");
  for (uint32_t d = 0; d < 3; ++d) *h.add_ranks() = Target({d}, v1::CASE_STATUS_WRONG);
  *h.add_pairs() = Target({0, 1}, v1::CASE_STATUS_OK);
  *h.add_pairs() = Target({0, 2}, v1::CASE_STATUS_WRONG);
  *h.add_pairs() = Target({1, 2}, v1::CASE_STATUS_WRONG);
  NodeReport report = Apply(h);
  EXPECT_EQ(report.verdict, NodeVerdict::kWrong);
  EXPECT_EQ(CulpritText(report.culprit), "device 2 (uuid-2)");

  // Every rank wrong alike and no pairs: no device stands out, none is accused.
  h.clear_pairs();
  report = Apply(h);
  EXPECT_EQ(report.verdict, NodeVerdict::kWrong);
  EXPECT_TRUE(report.culprit.empty());
  // One failing rank among good ones is the culprit; the machine may not list it.
  h.clear_ranks();
  h.mutable_machine()->clear_devices();
  *h.add_ranks() = Target({0}, v1::CASE_STATUS_OK);
  *h.add_ranks() = Target({5}, v1::CASE_STATUS_WRONG);
  EXPECT_EQ(CulpritText(Apply(h).culprit), "device 5");
}

TEST(FleetVerdictTest, BusyIsBusyAndQuotesTheEarlierVerdict) {
  v1::HealthResponse none;
  none.set_busy(true);
  none.set_busy_reason("2 other processes use device 0");
  NodeReport report = Apply(none);
  EXPECT_EQ(report.verdict, NodeVerdict::kBusy);
  EXPECT_EQ(report.message, "busy: 2 other processes use device 0");

  v1::HealthResponse earlier = Answer(v1::CASE_STATUS_WRONG, "WRONG: pair 0-1");
  earlier.set_busy(true);
  earlier.set_busy_reason("runs of other clients");
  report = Apply(earlier);
  EXPECT_EQ(report.verdict, NodeVerdict::kBusy);
  EXPECT_EQ(report.message,
            "busy: runs of other clients; last verdict WRONG, 45s ago: WRONG: pair 0-1");
}

TEST(FleetVerdictTest, CachedAnswersSayHowOldAndErrorsAreErrors) {
  v1::HealthResponse cached = Answer(v1::CASE_STATUS_OK, "healthy");
  cached.set_cached(true);
  EXPECT_EQ(Apply(cached).message, "cached, 45s old: healthy");
  EXPECT_EQ(Apply(Answer(v1::CASE_STATUS_ERROR, "worker died")).verdict, NodeVerdict::kError);
  // A summary that says OK over a hung target is not OK.
  v1::HealthResponse liar = Answer(v1::CASE_STATUS_OK, "healthy");
  *liar.add_ranks() = Target({0}, v1::CASE_STATUS_HANG, 2);
  EXPECT_EQ(Apply(liar).verdict, NodeVerdict::kHang);
}

TEST(FleetVerdictTest, AnAnswerWithoutAVerdictIsGarbage) {
  const NodeReport report = Apply(v1::HealthResponse{});
  EXPECT_EQ(report.verdict, NodeVerdict::kUnreachable);
  EXPECT_THAT(report.message, HasSubstr("not a colltestd"));
}

TEST(FleetVerdictTest, CallFailures) {
  struct Case {
    absl::Status status;
    bool connected;
    NodeVerdict verdict;
    bool retry;
    std::string message;
  };
  const std::vector<Case> cases = {
      {absl::UnavailableError("connection refused"), false, NodeVerdict::kUnreachable, true,
       "UNAVAILABLE: connection refused"},
      {absl::DeadlineExceededError("x"), false, NodeVerdict::kUnreachable, true,
       "no connection within 3s"},
      {absl::DeadlineExceededError("x"), true, NodeVerdict::kError, false,
       "no health verdict within 3s"},
      {absl::UnauthenticatedError("missing bearer token"), true, NodeVerdict::kUnauthenticated,
       false, "UNAUTHENTICATED: missing bearer token"},
      {absl::UnimplementedError("unknown service"), true, NodeVerdict::kUnreachable, false,
       "not a colltestd"},
      {absl::FailedPreconditionError("fault injection is disabled"), true, NodeVerdict::kError,
       false, "FAILED_PRECONDITION: fault injection is disabled"},
      {absl::FailedPreconditionError("BUSY: devices 0 in use by pid 7"), true, NodeVerdict::kBusy,
       false, "BUSY: devices 0 in use"},
  };
  for (const Case& c : cases) {
    NodeReport report;
    EXPECT_EQ(ApplyCallFailure(c.status, c.connected, absl::Seconds(3), &report), c.retry)
        << c.status;
    EXPECT_EQ(report.verdict, c.verdict) << c.status;
    EXPECT_THAT(report.message, HasSubstr(c.message));
  }
}

std::vector<NodeReport> Nodes(std::vector<NodeVerdict> verdicts) {
  std::vector<NodeReport> nodes;
  for (NodeVerdict v : verdicts) {
    NodeReport n;
    n.node = absl::StrCat("10.0.0.", nodes.size() + 1, ":1");
    n.verdict = v;
    nodes.push_back(n);
  }
  return nodes;
}

TEST(FleetVerdictTest, ExitCodeIsTheWorstNode) {
  using V = NodeVerdict;
  EXPECT_EQ(FleetExitCode(Nodes({V::kOk, V::kWarn})), kExitOk);
  EXPECT_EQ(FleetExitCode(Nodes({V::kOk, V::kUnreachable})), kExitUnreachable);
  EXPECT_EQ(FleetExitCode(Nodes({V::kUnreachable, V::kBusy})), kExitBusy);
  EXPECT_EQ(FleetExitCode(Nodes({V::kBusy, V::kWrong, V::kUnreachable})), kExitWrong);
  EXPECT_EQ(FleetExitCode(Nodes({V::kWrong, V::kHang})), kExitHang);
  EXPECT_EQ(FleetExitCode(Nodes({V::kHang, V::kError})), kExitError);
  EXPECT_EQ(FleetExitCode(Nodes({V::kOk, V::kUnauthenticated})), kExitError);
}

TEST(FleetVerdictTest, SummaryCountsAndNamesTheUnreachable) {
  using V = NodeVerdict;
  const std::vector<NodeReport> nodes =
      Nodes({V::kOk, V::kUnreachable, V::kWrong, V::kOk, V::kUnreachable});
  EXPECT_EQ(FleetSummaryLine(nodes, absl::Milliseconds(3250)),
            "fleet: 5 nodes in 3.2s: 2 OK, 1 WRONG, 2 UNREACHABLE (10.0.0.2:1, 10.0.0.5:1)");
  std::vector<NodeReport> many = Nodes(std::vector<V>(25, V::kUnreachable));
  EXPECT_THAT(FleetSummaryLine(many, absl::Seconds(1)), HasSubstr("10.0.0.20:1 and 5 more)"));
}

// A fake fleet: each node's answers in order (the last one repeats), and the calls it saw.
class FakeFleet {
 public:
  void Script(const std::string& name, std::vector<NodeAttempt> attempts) {
    script_[name] = std::move(attempts);
  }
  NodeCall Call(absl::Duration pause = absl::ZeroDuration()) {
    return [this, pause](const FleetTarget& target, absl::Duration deadline) {
      const int now_in_flight = ++in_flight_;
      {
        std::lock_guard<std::mutex> lock(mu_);
        max_in_flight_ = std::max(max_in_flight_, now_in_flight);
      }
      NodeAttempt attempt = Next(target.name);
      // A node scripted to time out takes its whole deadline, as a real one would.
      absl::SleepFor(absl::IsDeadlineExceeded(attempt.answer.status()) ? deadline : pause);
      --in_flight_;
      return attempt;
    };
  }
  int max_in_flight() const { return max_in_flight_; }

 private:
  NodeAttempt Next(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<NodeAttempt>& answers = script_[name];
    const size_t call = calls_[name]++;
    if (answers.empty()) return {Answer(v1::CASE_STATUS_OK, "healthy"), true};
    return answers[std::min(call, answers.size() - 1)];
  }

  std::mutex mu_;
  std::map<std::string, std::vector<NodeAttempt>> script_;
  std::map<std::string, size_t> calls_;
  std::atomic<int> in_flight_{0};
  int max_in_flight_ = 0;
};

FleetOptions Options(int nodes, uint32_t parallel, uint32_t retries, absl::Duration timeout) {
  FleetOptions options;
  for (int i = 0; i < nodes; ++i) {
    const std::string name = absl::StrCat("n", i);
    options.targets.push_back({name, "ipv4:127.0.0.1:1", ""});
  }
  options.parallel = parallel;
  options.retries = retries;
  options.node_timeout = timeout;
  return options;
}

TEST(FleetRunTest, RetriesOnlyTheUnreachableAndKeepsTheListOrder) {
  FakeFleet fleet;
  fleet.Script("n0", {{absl::UnavailableError("refused"), false}});
  fleet.Script("n1", {{absl::UnavailableError("refused"), false},
                      {Answer(v1::CASE_STATUS_OK, "healthy"), true}});
  fleet.Script("n2", {{absl::UnauthenticatedError("no token"), true}});
  const FleetReport report = RunFleetCheck(Options(4, 2, 2, absl::Seconds(5)), fleet.Call());
  ASSERT_EQ(report.nodes.size(), 4u);
  EXPECT_EQ(report.nodes[0].node, "n0");
  EXPECT_EQ(report.nodes[0].verdict, NodeVerdict::kUnreachable);
  EXPECT_EQ(report.nodes[0].attempts, 3);
  // Two pauses before the third attempt: 250 ms and 500 ms.
  EXPECT_GE(report.nodes[0].duration, absl::Milliseconds(750));
  EXPECT_EQ(report.nodes[1].verdict, NodeVerdict::kOk);
  EXPECT_EQ(report.nodes[1].attempts, 2);
  EXPECT_EQ(report.nodes[2].verdict, NodeVerdict::kUnauthenticated);
  EXPECT_EQ(report.nodes[2].attempts, 1);
  EXPECT_EQ(report.nodes[3].verdict, NodeVerdict::kOk);
  EXPECT_EQ(RetryBackoff(1), absl::Milliseconds(250));
  EXPECT_EQ(RetryBackoff(9), absl::Seconds(4));
}

TEST(FleetRunTest, AtMostParallelNodesAreAskedAtOnce) {
  FakeFleet fleet;
  const FleetReport report =
      RunFleetCheck(Options(24, 4, 0, absl::Seconds(5)), fleet.Call(absl::Milliseconds(20)));
  EXPECT_EQ(report.nodes.size(), 24u);
  EXPECT_LE(fleet.max_in_flight(), 4);
  EXPECT_GE(fleet.max_in_flight(), 2) << "the nodes were asked one at a time";
  // 24 nodes of 20 ms, 4 at a time: about 120 ms, far from the 480 ms of one at a time.
  EXPECT_LT(report.wall, absl::Milliseconds(400));
}

TEST(FleetRunTest, ASlowNodeHoldsOneSlotForItsDeadlineOnly) {
  FakeFleet fleet;
  fleet.Script("n0", {{absl::DeadlineExceededError("deadline"), true}});
  const absl::Duration timeout = absl::Milliseconds(600);
  const FleetReport report = RunFleetCheck(Options(6, 2, 2, timeout), fleet.Call());
  EXPECT_EQ(report.nodes[0].verdict, NodeVerdict::kError) << "a reached node is not retried";
  EXPECT_EQ(report.nodes[0].attempts, 1);
  EXPECT_GE(report.nodes[0].duration, timeout);
  for (size_t i = 1; i < report.nodes.size(); ++i) {
    EXPECT_EQ(report.nodes[i].verdict, NodeVerdict::kOk);
    EXPECT_LT(report.nodes[i].duration, absl::Milliseconds(200)) << report.nodes[i].node;
  }
  EXPECT_LT(report.wall, timeout + absl::Milliseconds(300));
}

TEST(FleetCliTest, RefusesABadListBeforeAskingAnyNode) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"colltest", "health", "--targets", "127.0.0.1:1,10.0.0.1"}, out, err), 3);
  EXPECT_THAT(err.str(), HasSubstr("--targets entry 2 '10.0.0.1': missing :PORT"));
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace colltest::client
