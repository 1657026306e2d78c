#include "server/health_check.h"

#include <set>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/run_executor.h"
#include "server/run_history.h"
#include "server/run_queue.h"
#include "tests/unit/server/fake_worker_pool.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;

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
  HealthChecker checker(&executor, &pool, "cpu", {v1::VARIANT_ONE_STAGE, v1::VARIANT_LAMPORT});
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
  const std::vector<v1::Variant> gpu = {v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL,
                                        v1::VARIANT_LAMPORT,   v1::VARIANT_LAMPORT_TB,
                                        v1::VARIANT_NCCL,      v1::VARIANT_AUTO};
  const HealthProfile cuda = HealthProfileFor("cuda", gpu);
  EXPECT_THAT(cuda.group.modes(), ::testing::ElementsAre(v1::MODE_GRAPH));
  EXPECT_THAT(cuda.group.n(), ::testing::ElementsAre(7168u));
  EXPECT_THAT(cuda.group.m(), ::testing::ElementsAre(1u, 128u));
  EXPECT_EQ(cuda.group.variants_size(), 5) << "auto is a dispatcher, not a kernel to check";
  EXPECT_EQ(cuda.group.pattern(), v1::PATTERN_NEG_ZERO);
  EXPECT_TRUE(cuda.group.stop_on_failure());
  EXPECT_THAT(cuda.pair.variants(),
              ::testing::ElementsAre(v1::VARIANT_ONE_STAGE, v1::VARIANT_LAMPORT));
  const HealthProfile cpu = HealthProfileFor("cpu", {v1::VARIANT_ONE_STAGE, v1::VARIANT_LAMPORT});
  EXPECT_THAT(cpu.group.modes(), ::testing::ElementsAre(v1::MODE_EAGER));
  EXPECT_THAT(cpu.group.n(), ::testing::ElementsAre(1024u));
}

}  // namespace
}  // namespace colltest::server
