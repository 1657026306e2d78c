#include "server/net/health_listener.h"

#include <future>
#include <memory>
#include <string>
#include <utility>

#include "grpcpp/create_channel.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/byte_buffer.h"
#include "gtest/gtest.h"
#include "server/runs/metrics.h"
#include "server/serving_state.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;

// grpc.health.v1's ServingStatus values (health.proto; Debian ships no generated stub for it).
enum HealthAnswer { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };

struct CallResult {
  grpc::Status status;
  std::string response;
};

// One unary call to `method` with `request` already serialized, over a plaintext channel without
// credentials: what Kubernetes' grpc probe sends.
CallResult Call(const std::string& address, const std::string& method, const std::string& request) {
  grpc::GenericStub stub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::ByteBuffer response_buffer;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request_buffer, &response_buffer,
                 [&done](grpc::Status status) { done.set_value(std::move(status)); });
  CallResult result{done.get_future().get(), ""};
  grpc::Slice response;
  if (result.status.ok() && response_buffer.DumpToSingleSlice(&response).ok()) {
    result.response.assign(reinterpret_cast<const char*>(response.begin()), response.size());
  }
  return result;
}

// Health/Check for `service`. HealthCheckRequest is one string field (tag 1, length-delimited);
// HealthCheckResponse one enum field (tag 1, varint), absent when 0.
int CheckHealth(const std::string& address, const std::string& service) {
  std::string request;
  if (!service.empty()) request = std::string{'\x0a', static_cast<char>(service.size())} + service;
  CallResult result = Call(address, "/grpc.health.v1.Health/Check", request);
  if (result.status.error_code() == grpc::StatusCode::NOT_FOUND) return kServiceUnknown;
  EXPECT_TRUE(result.status.ok()) << result.status.error_message();
  if (result.response.empty()) return kUnknown;
  EXPECT_EQ(result.response.size(), 2u);
  EXPECT_EQ(result.response[0], '\x08');
  return result.response[1];
}

v1::GroupHealth Group(v1::GroupState state) {
  v1::GroupHealth g;
  g.add_devices(0);
  g.add_devices(1);
  g.set_state(state);
  return g;
}

class HealthListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // As in colltestd, which links libgrpc++_reflection: every server would get reflection.
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    absl::StatusOr<std::unique_ptr<HealthListener>> started = HealthListener::Start("127.0.0.1:0");
    ASSERT_TRUE(started.ok()) << started.status();
    listener_ = *std::move(started);
  }

  Metrics metrics_;
  std::unique_ptr<HealthListener> listener_;
};

TEST_F(HealthListenerTest, MirrorsTheServingStateWithoutCredentials) {
  const std::string address = listener_->bound_address();
  ASSERT_NE(address, "127.0.0.1:0");
  // Before the main server is up nothing passes a probe.
  EXPECT_EQ(CheckHealth(address, ""), kNotServing);
  EXPECT_EQ(CheckHealth(address, kCollectiveTestService), kNotServing);

  ServingState serving(&metrics_);
  serving.OnGroupState(Group(v1::GROUP_STATE_SERVING));
  serving.Attach(listener_->health());
  EXPECT_EQ(CheckHealth(address, ""), kServing);
  EXPECT_EQ(CheckHealth(address, kCollectiveTestService), kServing);

  serving.OnGroupState(Group(v1::GROUP_STATE_DEGRADED));
  EXPECT_EQ(CheckHealth(address, ""), kServing);  // the process is up, its GPUs are not
  EXPECT_EQ(CheckHealth(address, kCollectiveTestService), kNotServing);
  EXPECT_EQ(CheckHealth(address, "no.such.Service"), kServiceUnknown);

  serving.Detach();
  EXPECT_EQ(CheckHealth(address, ""), kNotServing);
}

TEST_F(HealthListenerTest, ServesNothingButHealth) {
  const std::string address = listener_->bound_address();
  EXPECT_EQ(Call(address, "/colltest.v1.CollectiveTest/ListDevices", "").status.error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  // Reflection would list the API's services to anyone who reaches this unauthenticated port.
  EXPECT_EQ(Call(address, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", "")
                .status.error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

TEST(HealthListenerStartTest, RefusesAnAddressItCannotBind) {
  absl::StatusOr<std::unique_ptr<HealthListener>> first = HealthListener::Start("127.0.0.1:0");
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<HealthListener>> second =
      HealthListener::Start((*first)->bound_address());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace colltest::server
