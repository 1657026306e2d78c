#include "server/serving_state.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;

// Records what the gRPC health service would answer per service name.
class RecordingHealth final : public grpc::HealthCheckServiceInterface {
 public:
  void SetServingStatus(const std::string& service, bool serving) override {
    status[service] = serving;
  }
  void SetServingStatus(bool serving) override { status[""] = serving; }
  std::map<std::string, bool> status;
};

v1::GroupHealth Group(std::vector<uint32_t> devices, v1::GroupState state, uint64_t respawns = 0) {
  v1::GroupHealth g;
  g.mutable_devices()->Add(devices.begin(), devices.end());
  g.set_state(state);
  g.set_respawns(respawns);
  return g;
}

TEST(ServingStateTest, ServiceIsNotServingWhileAnyGroupIsNotAndTheProcessStaysUp) {
  Metrics metrics;
  ServingState state(&metrics);
  RecordingHealth health;
  state.OnGroupState(Group({0, 1}, v1::GROUP_STATE_SERVING));
  state.Attach(&health);
  EXPECT_TRUE(health.status[""]);
  EXPECT_TRUE(health.status[kCollectiveTestService]);

  state.OnGroupState(Group({2, 3}, v1::GROUP_STATE_RECOVERING, 1));
  EXPECT_FALSE(health.status[kCollectiveTestService]);
  EXPECT_TRUE(health.status[""]);
  EXPECT_FALSE(state.AllServing());
  state.OnGroupState(Group({2, 3}, v1::GROUP_STATE_DEGRADED, 1));
  EXPECT_FALSE(health.status[kCollectiveTestService]);
  state.OnGroupState(Group({2, 3}, v1::GROUP_STATE_SERVING, 1));
  EXPECT_TRUE(health.status[kCollectiveTestService]);
  EXPECT_TRUE(state.AllServing());

  state.Detach();
  EXPECT_FALSE(health.status[""]);
  EXPECT_FALSE(health.status[kCollectiveTestService]);
  // Late recoveries during shutdown change nothing.
  state.OnGroupState(Group({2, 3}, v1::GROUP_STATE_SERVING, 1));
  EXPECT_FALSE(health.status[kCollectiveTestService]);
}

TEST(ServingStateTest, EveryAttachedHealthServiceAnswersAlike) {
  Metrics metrics;
  ServingState state(&metrics);
  RecordingHealth main_server;
  RecordingHealth probe_port;  // the --health-listen server, attached after the main one
  state.Attach(&main_server);
  state.OnGroupState(Group({0, 1}, v1::GROUP_STATE_DEGRADED));
  state.Attach(&probe_port);
  for (RecordingHealth* health : {&main_server, &probe_port}) {
    EXPECT_TRUE(health->status[""]);
    EXPECT_FALSE(health->status[kCollectiveTestService]);
  }
  state.OnGroupState(Group({0, 1}, v1::GROUP_STATE_SERVING, 1));
  for (RecordingHealth* health : {&main_server, &probe_port}) {
    EXPECT_TRUE(health->status[kCollectiveTestService]);
  }

  state.Detach();
  for (RecordingHealth* health : {&main_server, &probe_port}) {
    EXPECT_FALSE(health->status[""]);
    EXPECT_FALSE(health->status[kCollectiveTestService]);
  }
  // One attached during shutdown never reports SERVING.
  RecordingHealth late;
  state.Attach(&late);
  EXPECT_FALSE(late.status[""]);
  EXPECT_FALSE(late.status[kCollectiveTestService]);
}

TEST(ServingStateTest, MetricsCountEachRespawnOnceAndShowTheState) {
  Metrics metrics;
  ServingState state(&metrics);
  state.OnGroupState(Group({0, 1}, v1::GROUP_STATE_SERVING));
  state.OnGroupState(Group({0, 1}, v1::GROUP_STATE_RECOVERING, 1));
  state.OnGroupState(Group({0, 1}, v1::GROUP_STATE_SERVING, 1));     // same respawn, seen again
  state.OnGroupState(Group({0, 1}, v1::GROUP_STATE_RECOVERING, 1));  // a Reset, no respawn
  state.OnGroupState(Group({0, 1}, v1::GROUP_STATE_RECOVERING, 2));
  const std::string text = metrics.Render();
  EXPECT_THAT(text, ::testing::HasSubstr("colltest_worker_restarts_total 2\n"));
  EXPECT_THAT(text,
              ::testing::HasSubstr("colltest_group_state{group=\"0,1\",state=\"recovering\"} 1\n"));
  EXPECT_THAT(text,
              ::testing::HasSubstr("colltest_group_state{group=\"0,1\",state=\"serving\"} 0\n"));
}

}  // namespace
}  // namespace colltest::server
