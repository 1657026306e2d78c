// Malformed input through a real colltestd (cpu backend, 4 ranks, fault injection allowed): each
// bad field is refused up front as INVALID_ARGUMENT naming it, no case runs, and the worker group
// stays SERVING without a recovery; bytes that are not a request get INVALID_ARGUMENT naming the
// request type instead of gRPC's empty INTERNAL.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;

v1::RunRequest SmallRun() {
  v1::RunRequest request = LamportRun(4, 8, 256);
  v1::SweepSpec* s = request.mutable_spec();
  s->set_warmup(1);
  s->set_iters(3);
  s->set_timeout_ms(1000);
  return request;
}

grpc::Status RunSpec(const Daemon& daemon, const v1::RunRequest& request) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::RunResult result;
  return daemon.Stub()->Run(&ctx, request, &result);
}

v1::ListDevicesResponse Devices(const Daemon& daemon) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ListDevicesResponse devices;
  EXPECT_TRUE(daemon.Stub()->ListDevices(&ctx, v1::ListDevicesRequest(), &devices).ok());
  return devices;
}

int RunCount(const Daemon& daemon) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ListRunsResponse runs;
  EXPECT_TRUE(daemon.Stub()->ListRuns(&ctx, v1::ListRunsRequest(), &runs).ok());
  return runs.runs_size();
}

struct BadInput {
  std::string name;
  std::function<void(v1::SweepSpec&)> spoil;
  std::string field;  // the message names it
};

std::vector<BadInput> BadInputs() {
  std::vector<BadInput> inputs;
  for (const std::string fault :
       {"foo", "missing_rank:9", "missing_rank:-1", "delay_rank:0:abc", "crash_rank:0:extra"}) {
    inputs.push_back({fault, [fault](v1::SweepSpec& s) { s.set_fault(fault); }, "spec.fault"});
  }
  inputs.push_back({"1 MB fault", [](v1::SweepSpec& s) { s.set_fault(std::string(1 << 20, 'x')); },
                    "spec.fault: 1048576 bytes, the limit is 64"});
  inputs.push_back({"label with a newline",
                    [](v1::SweepSpec& s) { s.set_label("ok\nINFO forged"); },
                    "spec.label: control character"});
  inputs.push_back({"label clearing the screen", [](v1::SweepSpec& s) { s.set_label("\x1b[2J"); },
                    "spec.label: control character"});
  inputs.push_back({"arm_repeat 2^32 - 1",
                    [](v1::SweepSpec& s) { s.mutable_knobs()->set_arm_repeat(4294967295u); },
                    "knobs.arm_repeat = 4294967295: must be <= 64"});
  return inputs;
}

TEST(InputTest, MalformedFieldsAreRefusedUpFrontAndTheGroupKeepsServing) {
  std::unique_ptr<Daemon> daemon = Daemon::Start(4, {"--allow-fault-injection"});
  // One good run first, so that the group exists and its recovery count is known.
  ASSERT_TRUE(RunSpec(*daemon, SmallRun()).ok());
  const v1::ListDevicesResponse before = Devices(*daemon);
  ASSERT_EQ(before.groups_size(), 1);
  ASSERT_EQ(before.groups(0).state(), v1::GROUP_STATE_SERVING);

  for (const BadInput& input : BadInputs()) {
    v1::RunRequest request = SmallRun();
    input.spoil(*request.mutable_spec());
    const grpc::Status status = RunSpec(*daemon, request);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << input.name;
    EXPECT_THAT(status.error_message(), HasSubstr(input.field)) << input.name;
  }

  EXPECT_EQ(RunCount(*daemon), 1) << "a refused request must not become a run";
  const v1::ListDevicesResponse after = Devices(*daemon);
  ASSERT_EQ(after.groups_size(), 1);
  EXPECT_EQ(after.groups(0).state(), v1::GROUP_STATE_SERVING);
  EXPECT_EQ(after.groups(0).recoveries(), before.groups(0).recoveries());
  EXPECT_EQ(after.groups(0).respawns(), before.groups(0).respawns());
}

// Sends `bytes` as the request of `method` and returns the status.
grpc::Status SendRaw(const Daemon& daemon, const std::string& method, const std::string& bytes) {
  grpc::GenericStub stub(grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::CompletionQueue cq;
  grpc::Slice slice(bytes);
  const grpc::ByteBuffer request(&slice, 1);
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&ctx, method, request, &cq);
  call->StartCall();
  grpc::ByteBuffer response;
  grpc::Status status;
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  EXPECT_TRUE(cq.Next(&tag, &ok));
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return status;
}

TEST(InputTest, UndecodableRequestsAreInvalidArgumentNamingTheType) {
  std::unique_ptr<Daemon> daemon = Daemon::Start(2);
  // A RunRequest whose label holds the byte 0xff: valid protobuf, invalid proto3 string.
  v1::RunRequest request = SmallRun();
  request.mutable_spec()->set_world_size(2);
  request.mutable_spec()->set_label("label:@@");
  std::string bytes = request.SerializeAsString();
  const size_t at = bytes.find("@@");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = '\xff';

  const std::string expected =
      "request could not be parsed as colltest.v1.RunRequest: a string field holds invalid "
      "UTF-8, or the bytes are not that message";
  grpc::Status status = SendRaw(*daemon, "/colltest.v1.CollectiveTest/Run", bytes);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_EQ(status.error_message(), expected);

  status = SendRaw(*daemon, "/colltest.v1.CollectiveTest/Run", "\xff\xff\xff\xff garbage");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_EQ(status.error_message(), expected);

  // Another request type.
  status = SendRaw(*daemon, "/colltest.v1.CollectiveTest/GetRun", "\xff\xff\xff\xff");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("as colltest.v1.GetRunRequest:"));
  EXPECT_EQ(RunCount(*daemon), 0);
}

}  // namespace
}  // namespace colltest::testing
