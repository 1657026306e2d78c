#include "server/health/health_check.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/health/health_report.h"
#include "server/runs/run_executor.h"
#include "server/runs/run_history.h"
#include "server/runs/run_queue.h"
#include "tests/unit/server/fake_worker_pool.h"
#include "tests/unit/server/test_capabilities.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The cpu backend's capabilities with two variants: the checks below stay short.
colltest::worker::v1::Capabilities TwoCpuVariants() {
  colltest::worker::v1::Capabilities caps = testing::CpuCapabilities();
  caps.clear_variants();
  caps.add_variants(v1::VARIANT_ONE_STAGE);
  caps.add_variants(v1::VARIANT_LAMPORT);
  return caps;
}

TEST(PairRoundsTest, EveryPairOnceInRoundsOfDisjointPairs) {
  for (size_t count : {2u, 3u, 4u, 5u, 8u}) {
    std::vector<uint32_t> devices;
    for (uint32_t d = 0; d < count; ++d) devices.push_back(d * 2 + 1);  // not 0..n-1
    const auto rounds = PairRounds(devices);
    std::set<std::pair<uint32_t, uint32_t>> seen;
    for (const auto& round : rounds) {
      std::set<uint32_t> busy;
      for (const auto& [a, b] : round) {
        EXPECT_LT(a, b);
        EXPECT_TRUE(busy.insert(a).second) << "device " << a << " twice in a round";
        EXPECT_TRUE(busy.insert(b).second) << "device " << b << " twice in a round";
        EXPECT_TRUE(seen.insert({a, b}).second) << a << "-" << b << " twice";
      }
    }
    EXPECT_EQ(seen.size(), count * (count - 1) / 2) << count << " devices";
    // As few rounds as a round-robin allows: n - 1 for even n, n for odd n.
    EXPECT_EQ(rounds.size(), count % 2 == 0 ? count - 1 : count) << count << " devices";
  }
  EXPECT_TRUE(PairRounds({4}).empty());
}

TEST(FaultForPairTest, ARankedFaultFollowsItsDeviceIntoThePairsHoldingIt) {
  const std::vector<uint32_t> group = {4, 5, 6, 7};
  // Rank 1 of the group is device 5.
  EXPECT_EQ(FaultForPair("missing_rank:1", group, 4, 5), "missing_rank:1");
  EXPECT_EQ(FaultForPair("missing_rank:1", group, 5, 7), "missing_rank:0");
  EXPECT_EQ(FaultForPair("missing_rank:1", group, 4, 6), "");
  EXPECT_EQ(FaultForPair("delay_rank:1:2000", group, 5, 6), "delay_rank:0:2000");
  // Without a rank the fault applies everywhere; a fault outside the grammar (Check() refuses it
  // first) is passed on as is, for the validation of the pair's run to name it.
  EXPECT_EQ(FaultForPair("skip_rearm", group, 4, 6), "skip_rearm");
  EXPECT_EQ(FaultForPair("missing_rank:9", group, 4, 6), "missing_rank:9");
  EXPECT_EQ(FaultForPair("", group, 4, 6), "");
}

// A checker over a pool that runs nothing: enough to see what Check() refuses before any case.
absl::StatusOr<v1::HealthResponse> CheckOnFourRanks(const v1::HealthRequest& request,
                                                    bool allow_fault_injection,
                                                    testing::FakeWorkerPool& pool) {
  ServerLimits limits;
  limits.backend = "cpu";
  limits.devices = {0, 1, 2, 3};
  limits.allow_fault_injection = allow_fault_injection;
  auto store = store::RunStore::Open(":memory:");
  if (!store.ok()) return store.status();
  RunHistory history(store->get());
  DeviceArbiter arbiter;
  RunExecutor executor(limits, &pool, &history, &arbiter);
  HealthChecker checker(&executor, TwoCpuVariants());
  RunObserver observer;
  return checker.Check(request, observer);
}

TEST(HealthCheckerTest, AFaultIsCheckedUpFrontAgainstTheGroupNamingTheRequestField) {
  testing::FakeWorkerPool pool;
  v1::HealthRequest request;
  request.set_pairs(true);
  for (const std::string& fault :
       std::vector<std::string>{"missing_rank:4", "foo", "delay_rank:0:abc", "crash_rank:0:extra",
                                std::string(100, 'x')}) {
    request.set_fault(fault);
    const absl::StatusOr<v1::HealthResponse> health = CheckOnFourRanks(request, true, pool);
    EXPECT_EQ(health.status().code(), absl::StatusCode::kInvalidArgument) << fault;
    // "fault", the HealthRequest's field, not the "spec.fault" of the group's run.
    EXPECT_THAT(std::string(health.status().message()), ::testing::StartsWith("fault: ")) << fault;
  }
  request.set_fault(std::string(100, 'x'));
  EXPECT_EQ(CheckOnFourRanks(request, true, pool).status().message(),
            "fault: 100 bytes, the limit is 64");
  EXPECT_TRUE(pool.calls().empty());

  // The operator's "no" comes first, whatever the fault says.
  EXPECT_EQ(CheckOnFourRanks(request, false, pool).status().code(),
            absl::StatusCode::kFailedPrecondition);
  request.set_fault("missing_rank:3");
  ASSERT_TRUE(CheckOnFourRanks(request, true, pool).ok());
  EXPECT_FALSE(pool.calls().empty());
}

TEST(HealthProfileTest, GpusRunGraphsAtTheSeedsHiddenSizeAndTheCpuASmallerEagerProfile) {
  const HealthProfile cuda = HealthProfileFor(testing::GpuCapabilities());
  EXPECT_THAT(cuda.group.modes(), ::testing::ElementsAre(v1::MODE_GRAPH));
  EXPECT_THAT(cuda.group.n(), ::testing::ElementsAre(7168u));
  EXPECT_THAT(cuda.group.m(), ::testing::ElementsAre(1u, 128u));
  EXPECT_EQ(cuda.group.variants_size(), 5) << "auto is a dispatcher, not a kernel to check";
  EXPECT_EQ(cuda.group.pattern(), v1::PATTERN_NEG_ZERO);
  EXPECT_TRUE(cuda.group.stop_on_failure());
  EXPECT_THAT(cuda.pair.variants(),
              ::testing::ElementsAre(v1::VARIANT_ONE_STAGE, v1::VARIANT_LAMPORT));
  const HealthProfile cpu = HealthProfileFor(TwoCpuVariants());
  EXPECT_THAT(cpu.group.modes(), ::testing::ElementsAre(v1::MODE_EAGER));
  EXPECT_THAT(cpu.group.n(), ::testing::ElementsAre(1024u));
}

// A check of `level` on four cpu ranks over `pool`, with the machine's figures.
absl::StatusOr<v1::HealthResponse> CheckLevel(v1::HealthLevel level, bool allow_fault_injection,
                                              testing::FakeWorkerPool& pool,
                                              v1::MachineIdentity machine = {},
                                              ExpectedBandwidth expected = {}) {
  ServerLimits limits;
  limits.backend = "cpu";
  limits.devices = {0, 1, 2, 3};
  limits.allow_fault_injection = allow_fault_injection;
  auto store = store::RunStore::Open(":memory:");
  if (!store.ok()) return store.status();
  RunHistory history(store->get());
  DeviceArbiter arbiter;
  RunExecutor executor(limits, &pool, &history, &arbiter);
  HealthChecker checker(&executor, TwoCpuVariants(), std::move(machine), std::move(expected));
  v1::HealthRequest request;
  request.set_level(level);
  RunObserver observer;
  return checker.Check(request, observer);
}

// Ranks that honour missing_rank:R as the workers do: R does nothing, its peers name it.
absl::StatusOr<std::vector<v1::RankResult>> HonourMissingRank(
    absl::Span<const uint32_t> devices, const worker::v1::CaseRequest& request) {
  std::vector<v1::RankResult> ranks = testing::FakeWorkerPool::AllOk(devices);
  if (!absl::StartsWith(request.fault(), "missing_rank:")) return ranks;
  const int missing = request.fault().back() - '0';
  for (v1::RankResult& r : ranks) {
    r.set_status(v1::CASE_STATUS_HANG);
    r.set_suspect_peer(static_cast<int>(r.rank()) == missing ? -1 : missing);
  }
  return ranks;
}

TEST(HealthLevelTest, StandardRunsTheSelfTestFirstThenEveryPairAndTheStress) {
  testing::FakeWorkerPool pool;
  pool.SetHandler(HonourMissingRank);
  const absl::StatusOr<v1::HealthResponse> health =
      CheckLevel(v1::HEALTH_LEVEL_STANDARD, true, pool);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->level(), v1::HEALTH_LEVEL_STANDARD);
  EXPECT_EQ(health->status(), v1::CASE_STATUS_OK) << health->message();
  EXPECT_TRUE(health->self_test().ran());
  EXPECT_TRUE(health->self_test().passed()) << health->self_test().message();
  EXPECT_EQ(health->self_test().fault(), "missing_rank:3");
  EXPECT_THAT(health->message(), HasSubstr("healthy: 4 ranks, 6 pairs"));
  EXPECT_THAT(health->message(), HasSubstr("hang self test passed"));
  // The planted hang is not a verdict on the node: none of its cases is reported.
  for (const v1::CaseResult& c : health->cases()) EXPECT_EQ(c.status(), v1::CASE_STATUS_OK);
  EXPECT_EQ(health->pairs_size(), 6);
  const std::vector<testing::FakeWorkerPool::Call> calls = pool.calls();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls[0].request.fault(), "missing_rank:3");
  EXPECT_TRUE(std::any_of(calls.begin(), calls.end(), [](const auto& c) {
    return c.devices.size() == 4 && c.request.stress_calls() == 100;
  }));
}

TEST(HealthLevelTest, ACheckerBlindToTheSelfTestsHangIsAnError) {
  testing::FakeWorkerPool pool;  // every rank answers OK, the planted hang included
  const absl::StatusOr<v1::HealthResponse> health =
      CheckLevel(v1::HEALTH_LEVEL_STANDARD, true, pool);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->status(), v1::CASE_STATUS_ERROR);
  EXPECT_THAT(health->message(), StartsWith("ERROR: hang detection is broken: planted "));
  EXPECT_TRUE(health->self_test().ran());
  EXPECT_FALSE(health->self_test().passed());
}

TEST(HealthLevelTest, WithoutFaultInjectionTheSelfTestDoesNotRunAndSaysWhy) {
  testing::FakeWorkerPool pool;
  const absl::StatusOr<v1::HealthResponse> health =
      CheckLevel(v1::HEALTH_LEVEL_STANDARD, false, pool);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->status(), v1::CASE_STATUS_OK) << health->message();
  EXPECT_FALSE(health->self_test().ran());
  EXPECT_EQ(health->self_test().message(), kSelfTestNotAllowed);
  EXPECT_THAT(health->message(), HasSubstr("hang self test not run: fault injection not allowed"));
  for (const auto& call : pool.calls()) EXPECT_EQ(call.request.fault(), "");
}

TEST(HealthLevelTest, QuickIsTheDefaultAndHasNoSelfTest) {
  testing::FakeWorkerPool pool;
  const absl::StatusOr<v1::HealthResponse> health =
      CheckLevel(v1::HEALTH_LEVEL_UNSPECIFIED, true, pool);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->level(), v1::HEALTH_LEVEL_QUICK);
  EXPECT_FALSE(health->has_self_test());
  EXPECT_EQ(health->pairs_size(), 0);
  EXPECT_EQ(health->run_ids_size(), 1);
}

TEST(HealthLevelTest, LongReportsEveryPairsBusbwAgainstItsExpectedFigure) {
  testing::FakeWorkerPool pool;
  pool.SetHandler(HonourMissingRank);
  v1::MachineIdentity machine;
  for (uint32_t i = 0; i < 4; ++i) {
    v1::Device* d = machine.add_devices();
    d->set_index(i);
    d->set_name(i == 0 ? "Model A" : "Model B");
  }
  for (uint32_t a = 0; a < 4; ++a) {
    for (uint32_t b = a + 1; b < 4; ++b) {
      v1::Link* link = machine.add_links();
      link->set_a(a);
      link->set_b(b);
      link->set_kind("shm");
    }
  }
  // Far above what the fake pool's timings give: every pair with a figure is below it.
  absl::StatusOr<ExpectedBandwidth> expected =
      ExpectedBandwidth::Parse(R"({"Model B": {"shm": 1000000}})", "expected_busbw.json");
  ASSERT_TRUE(expected.ok());
  const absl::StatusOr<v1::HealthResponse> health =
      CheckLevel(v1::HEALTH_LEVEL_LONG, true, pool, machine, *expected);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->level(), v1::HEALTH_LEVEL_LONG);
  ASSERT_EQ(health->pairs_size(), 6);
  for (const v1::HealthTarget& p : health->pairs()) {
    EXPECT_GT(p.busbw_gbps(), 0.0) << p.ShortDebugString();
    const bool has_figure = p.devices(0) != 0;  // a pair's model is its first device's
    EXPECT_EQ(p.expected_busbw_gbps(), has_figure ? 1000000.0 : 0.0) << p.ShortDebugString();
    EXPECT_EQ(p.below_expected(), has_figure) << p.ShortDebugString();
  }
  EXPECT_THAT(health->message(), HasSubstr("WARN busbw below 80% of expected: pair 1-2 at "));
  EXPECT_THAT(health->message(), HasSubstr("no expected figure for Model A/shm"));
  EXPECT_EQ(health->status(), v1::CASE_STATUS_OK) << "a WARN, not a failure";
}

// A pair run whose only case reached `busbw` GB/s.
v1::RunResult BandwidthRun(double busbw) {
  v1::RunResult run;
  run.set_run_id(absl::StrCat("r-bw-", busbw));
  v1::CaseResult* c = run.add_cases();
  c->set_status(v1::CASE_STATUS_OK);
  c->set_busbw_gbps(busbw);
  c->mutable_timing()->set_median_us(100);
  return run;
}

// Two slots of one GPU have no link: their pair has no busbw and says why, so that a reader of the
// pair alone (the dashboard, a fleet check) does not take the 0 for a dead link.
TEST(HealthReportTest, APairOfSlotsOfOneGpuSaysWhyItHasNoBusbw) {
  HealthRuns runs;
  runs.devices = {0, 1, 2};
  runs.pairs = true;
  runs.group.push_back(BandwidthRun(1));
  runs.pair_runs.emplace(PairKey{0, 1}, BandwidthRun(1));
  runs.pair_runs.emplace(PairKey{0, 2}, BandwidthRun(1));
  runs.bandwidth_skipped_same_gpu.push_back({0, 1});
  runs.bandwidth_runs.emplace(PairKey{0, 2}, BandwidthRun(50));
  const v1::HealthResponse health = BuildHealthReport(runs, HealthReportContext{1.5});
  ASSERT_EQ(health.pairs_size(), 2);
  for (const v1::HealthTarget& p : health.pairs()) {
    EXPECT_EQ(p.status(), v1::CASE_STATUS_OK) << p.ShortDebugString();
    if (p.devices(1) == 1) {
      EXPECT_EQ(p.busbw_gbps(), 0.0);
      EXPECT_THAT(p.message(), HasSubstr("busbw skipped: slots of one GPU"));
    } else {
      EXPECT_EQ(p.busbw_gbps(), 50.0);
      EXPECT_EQ(p.message(), "") << "a measured pair has nothing to explain";
    }
  }
}

TEST(HealthReportTest, BelowExpectedIsUnderTheDocumentedShareOfTheFigure) {
  v1::MachineIdentity machine;
  for (uint32_t i = 0; i < 3; ++i) {
    v1::Device* d = machine.add_devices();
    d->set_index(i);
    d->set_name("G");
  }
  for (const auto& [a, b] : std::vector<PairKey>{{0, 1}, {0, 2}, {1, 2}}) {
    v1::Link* link = machine.add_links();
    link->set_a(a);
    link->set_b(b);
    link->set_kind("nvlink");
  }
  const absl::StatusOr<ExpectedBandwidth> expected =
      ExpectedBandwidth::Parse(R"({"G": {"nvlink": 100}})", "f.json");
  ASSERT_TRUE(expected.ok());
  HealthRuns runs;
  runs.devices = {0, 1, 2};
  runs.pairs = true;
  runs.group.push_back(BandwidthRun(1));
  // 80.0 of 100 is at the threshold (not below); 79.9 is below it.
  const std::map<PairKey, double> busbw = {{{0, 1}, 80.0}, {{0, 2}, 79.9}, {{1, 2}, 120.0}};
  for (const auto& [key, gbps] : busbw) {
    runs.pair_runs.emplace(key, BandwidthRun(1));
    runs.bandwidth_runs.emplace(key, BandwidthRun(gbps));
  }
  const v1::HealthResponse health =
      BuildHealthReport(runs, HealthReportContext{1.5, &machine, &*expected});
  ASSERT_EQ(health.pairs_size(), 3);
  EXPECT_FALSE(health.pairs(0).below_expected());
  EXPECT_TRUE(health.pairs(1).below_expected());
  EXPECT_FALSE(health.pairs(2).below_expected());
  EXPECT_EQ(health.pairs(1).busbw_gbps(), 79.9);
  EXPECT_EQ(health.pairs(1).expected_busbw_gbps(), 100.0);
  EXPECT_THAT(health.message(), HasSubstr("pair 0-2 at 79.9 of 100.0 GB/s"));
  EXPECT_THAT(health.message(), ::testing::Not(HasSubstr("pair 0-1 at")));
}

}  // namespace
}  // namespace colltest::server
