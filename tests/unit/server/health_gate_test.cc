#include "server/health/health_gate.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;

TEST(GiveUpAtTest, LeavesTenPercentOfTheTimeLeftAndAtLeastOneSecond) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  EXPECT_EQ(GiveUpAt(now, now + absl::Seconds(30)), now + absl::Seconds(27));
  EXPECT_EQ(GiveUpAt(now, now + absl::Seconds(3)), now + absl::Seconds(2));
  EXPECT_EQ(GiveUpAt(now, absl::InfiniteFuture()), absl::InfiniteFuture());
}

class HealthGateTest : public ::testing::Test {
 protected:
  using Behaviour = std::function<absl::StatusOr<v1::HealthResponse>(RunObserver&)>;

  HealthGateTest() { MakeGate(0); }

  void MakeGate(uint32_t health_rate_per_caller) {
    HealthGate::Options options;
    options.machine.set_hostname("node-7");
    options.all_devices = {0, 1, 2, 3};
    options.health_rate_per_caller = health_rate_per_caller;
    options.now = [this] { return now_; };
    gate_ = std::make_unique<HealthGate>(
        [this](const v1::HealthRequest& request, RunObserver& observer, const std::string& owner) {
          ++checks_;
          last_owner_ = owner;
          return behaviour_ ? behaviour_(observer) : Verdict(v1::CASE_STATUS_OK, "healthy");
        },
        [this](const std::vector<uint32_t>& devices) {
          asked_devices_ = devices;
          return holders_;
        },
        std::move(options));
  }

  static v1::HealthResponse Verdict(v1::CaseStatus status, const std::string& message) {
    v1::HealthResponse response;
    response.set_status(status);
    response.set_message(message);
    response.add_run_ids("r-first");
    response.add_ranks()->add_devices(0);
    return response;
  }

  // A check whose first run waits in the queue: the clock moves on until the observer says stop.
  Behaviour Queued() {
    return [this](RunObserver& observer) -> absl::StatusOr<v1::HealthResponse> {
      observer.OnQueued("r-queued", 1, 8);
      for (int i = 0; i < 100000 && !observer.ClientGone(); ++i) now_ += absl::Milliseconds(10);
      return absl::CancelledError("run r-queued cancelled while queued");
    };
  }

  absl::StatusOr<v1::HealthResponse> Check(const v1::HealthRequest& request,
                                           absl::Time deadline = absl::InfiniteFuture(),
                                           const std::string& owner = "alice") {
    RunObserver caller;
    return gate_->Check(request, caller, deadline, owner);
  }

  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  int checks_ = 0;
  std::string last_owner_;
  Behaviour behaviour_;
  std::vector<std::string> holders_;
  std::vector<uint32_t> asked_devices_;
  std::unique_ptr<HealthGate> gate_;
};

TEST_F(HealthGateTest, FreshVerdictNamesTheMachineTheLevelAndItsTime) {
  absl::StatusOr<v1::HealthResponse> health = Check({});
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(checks_, 1);
  EXPECT_EQ(last_owner_, "alice");
  EXPECT_EQ(health->message(), "healthy");
  EXPECT_EQ(health->machine().hostname(), "node-7");
  EXPECT_EQ(health->level(), v1::HEALTH_LEVEL_QUICK);  // unspecified is quick
  EXPECT_EQ(health->verdict_unix_ms(), absl::ToUnixMillis(now_));
  EXPECT_FALSE(health->cached());
  EXPECT_FALSE(health->busy());
}

TEST_F(HealthGateTest, VerdictNoOlderThanAskedIsAnsweredWithoutRunning) {
  const int64_t first = Check({})->verdict_unix_ms();
  now_ += absl::Seconds(10);
  v1::HealthRequest request;
  request.set_max_verdict_age_ms(10000);
  absl::StatusOr<v1::HealthResponse> cached = Check(request);
  ASSERT_TRUE(cached.ok());
  EXPECT_EQ(checks_, 1);
  EXPECT_TRUE(cached->cached());
  EXPECT_EQ(cached->verdict_unix_ms(), first);
  EXPECT_EQ(cached->run_ids(0), "r-first");
  EXPECT_EQ(cached->machine().hostname(), "node-7");
  EXPECT_EQ(cached->level(), v1::HEALTH_LEVEL_QUICK);

  now_ += absl::Milliseconds(1);  // now 1 ms too old
  absl::StatusOr<v1::HealthResponse> fresh = Check(request);
  EXPECT_EQ(checks_, 2);
  EXPECT_FALSE(fresh->cached());
  EXPECT_EQ(fresh->verdict_unix_ms(), absl::ToUnixMillis(now_));
}

TEST_F(HealthGateTest, WithoutMaxAgeEveryCallRuns) {
  ASSERT_TRUE(Check({}).ok());
  ASSERT_TRUE(Check({}).ok());
  EXPECT_EQ(checks_, 2);
}

TEST_F(HealthGateTest, VerdictsAreKeptPerDevicesLevelAndPairs) {
  ASSERT_TRUE(Check({}).ok());  // every device: 0,1,2,3
  v1::HealthRequest request;
  request.set_max_verdict_age_ms(60000);
  request.add_devices(0);
  request.add_devices(1);
  EXPECT_FALSE(Check(request)->cached());
  request.clear_devices();
  for (uint32_t d : {0, 1, 2, 3}) request.add_devices(d);
  EXPECT_TRUE(Check(request)->cached()) << "the same devices, named";
  request.set_level(v1::HEALTH_LEVEL_STANDARD);
  EXPECT_FALSE(Check(request)->cached());
  request.set_level(v1::HEALTH_LEVEL_QUICK);
  request.set_pairs(true);
  EXPECT_FALSE(Check(request)->cached());
  EXPECT_EQ(checks_, 4);
}

TEST_F(HealthGateTest, CheckWithAFaultIsNeitherAnsweredFromMemoryNorRemembered) {
  ASSERT_TRUE(Check({}).ok());
  v1::HealthRequest request;
  request.set_max_verdict_age_ms(60000);
  request.set_fault("missing_rank:1");
  behaviour_ = [](RunObserver&) { return Verdict(v1::CASE_STATUS_HANG, "planted"); };
  EXPECT_EQ(Check(request)->message(), "planted");
  request.clear_fault();
  EXPECT_EQ(Check(request)->message(), "healthy");
  EXPECT_EQ(checks_, 2);
}

TEST_F(HealthGateTest, QueuedPastTheGiveUpTimeAnswersBusyWithTheLastVerdictAndWhoHolds) {
  behaviour_ = [](RunObserver&) { return Verdict(v1::CASE_STATUS_WRONG, "rank 1 WRONG"); };
  const int64_t last = Check({})->verdict_unix_ms();
  now_ += absl::Minutes(5);
  behaviour_ = Queued();
  holders_ = {"run r-9 of bob"};
  const absl::Time start = now_;
  absl::StatusOr<v1::HealthResponse> health = Check({}, now_ + absl::Seconds(3));
  ASSERT_TRUE(health.ok()) << health.status();
  // Gave up 1 s before the deadline (10 % of 3 s is less than the 1 s floor).
  EXPECT_GE(now_ - start, absl::Seconds(2));
  EXPECT_LT(now_ - start, absl::Seconds(2) + absl::Milliseconds(20));
  EXPECT_TRUE(health->busy());
  EXPECT_FALSE(health->cached());
  EXPECT_EQ(health->busy_reason(),
            "devices 0,1,2,3 busy with run r-9 of bob: the check could not start before the "
            "call's deadline");
  EXPECT_EQ(asked_devices_, std::vector<uint32_t>({0, 1, 2, 3}));
  EXPECT_EQ(health->status(), v1::CASE_STATUS_WRONG);
  EXPECT_EQ(health->message(), "rank 1 WRONG");
  EXPECT_EQ(health->verdict_unix_ms(), last);
  EXPECT_EQ(health->ranks_size(), 1);
  EXPECT_EQ(health->machine().hostname(), "node-7");
  EXPECT_EQ(health->level(), v1::HEALTH_LEVEL_QUICK);
}

TEST_F(HealthGateTest, BusyWithoutALastVerdictHasStatusUnspecified) {
  behaviour_ = Queued();
  v1::HealthRequest request;
  request.add_devices(0);
  request.add_devices(1);
  absl::StatusOr<v1::HealthResponse> health = Check(request, now_ + absl::Seconds(30));
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_TRUE(health->busy());
  EXPECT_THAT(health->busy_reason(), ::testing::StartsWith("devices 0,1 busy with other runs"));
  EXPECT_EQ(health->status(), v1::CASE_STATUS_UNSPECIFIED);
  EXPECT_EQ(health->verdict_unix_ms(), 0);
}

TEST_F(HealthGateTest, OnceAnyRunStartedOnlyTheCallerStopsIt) {
  behaviour_ = [this](RunObserver& observer) -> absl::StatusOr<v1::HealthResponse> {
    observer.OnQueued("r-1", 1, 8);
    observer.OnStarted("r-1", 8);
    now_ += absl::Seconds(10);  // past the deadline's give-up time, and past the deadline
    if (observer.ClientGone()) return absl::CancelledError("stopped");
    return Verdict(v1::CASE_STATUS_OK, "healthy");
  };
  absl::StatusOr<v1::HealthResponse> health = Check({}, now_ + absl::Seconds(3));
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_FALSE(health->busy());
}

TEST_F(HealthGateTest, WithoutADeadlineItWaitsAsLongAsItTakes) {
  behaviour_ = [this](RunObserver& observer) -> absl::StatusOr<v1::HealthResponse> {
    now_ += absl::Hours(1);
    if (observer.ClientGone()) return absl::CancelledError("stopped");
    return Verdict(v1::CASE_STATUS_OK, "healthy");
  };
  EXPECT_FALSE(Check({})->busy());
}

TEST_F(HealthGateTest, BusyRefusalOfOtherProcessesIsAnAnswerNotAnError) {
  ASSERT_TRUE(Check({}).ok());
  const std::string busy =
      "BUSY: device 1 is used by pid 4242 (python3, 20.0 GiB); --force runs anyway";
  behaviour_ = [&](RunObserver&) { return absl::FailedPreconditionError(busy); };
  absl::StatusOr<v1::HealthResponse> health = Check({});
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_TRUE(health->busy());
  EXPECT_EQ(health->busy_reason(), busy);
  EXPECT_EQ(health->status(), v1::CASE_STATUS_OK);
  EXPECT_EQ(health->message(), "healthy");
}

TEST_F(HealthGateTest, OtherErrorsAreTheChecksOwn) {
  behaviour_ = [](RunObserver&) { return absl::InvalidArgumentError("devices: listed twice"); };
  EXPECT_EQ(Check({}).status().code(), absl::StatusCode::kInvalidArgument);
  behaviour_ = [](RunObserver&) { return absl::FailedPreconditionError("not busy"); };
  EXPECT_EQ(Check({}).status().code(), absl::StatusCode::kFailedPrecondition);
  // The caller went away while the check was queued: nobody to answer, and not busy.
  behaviour_ = [](RunObserver&) { return absl::CancelledError("run r-1 cancelled while queued"); };
  EXPECT_EQ(Check({}, now_ + absl::Seconds(30)).status().code(), absl::StatusCode::kCancelled);
}

TEST_F(HealthGateTest, ChecksBeyondTheCallersRateAreRefusedNamingTheLimitAndWhenToRetry) {
  MakeGate(2);
  EXPECT_TRUE(Check({}).ok());
  EXPECT_TRUE(Check({}).ok());
  const absl::StatusOr<v1::HealthResponse> refused = Check({});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("alice may start 2 health checks per minute (colltestd "
                        "--health-rate-per-caller); retry in 30s"));
  EXPECT_EQ(checks_, 2);
  // Another caller has its own rate; a peer that reconnects from another port does not.
  EXPECT_TRUE(Check({}, absl::InfiniteFuture(), "bob").ok());
  EXPECT_TRUE(Check({}, absl::InfiniteFuture(), "peer:ipv4:127.0.0.1:40000").ok());
  EXPECT_TRUE(Check({}, absl::InfiniteFuture(), "peer:ipv4:127.0.0.1:40001").ok());
  EXPECT_FALSE(Check({}, absl::InfiniteFuture(), "peer:ipv4:127.0.0.1:40002").ok());
  now_ += absl::Seconds(30);
  EXPECT_TRUE(Check({}).ok());
}

TEST_F(HealthGateTest, AnswersFromMemoryAreNotCountedAgainstTheRate) {
  MakeGate(1);
  EXPECT_TRUE(Check({}).ok());
  v1::HealthRequest recent;
  recent.set_max_verdict_age_ms(60'000);
  for (int i = 0; i < 5; ++i) {
    const absl::StatusOr<v1::HealthResponse> cached = Check(recent);
    ASSERT_TRUE(cached.ok()) << cached.status();
    EXPECT_TRUE(cached->cached());
  }
  EXPECT_EQ(checks_, 1);
}

}  // namespace
}  // namespace colltest::server
