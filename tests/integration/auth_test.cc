// Roles, ownership and the listen guard on a real colltestd with a token file.
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace v1 = ::colltest::v1;

constexpr char kViewer[] = "viewer-token-00000000001";
constexpr char kRunnerA[] = "runner-token-0000000000a";
constexpr char kRunnerB[] = "runner-token-0000000000b";
constexpr char kAdmin[] = "admin-token-000000000001";

std::string WriteTokenFile() {
  return ::colltest::testing::WriteTokenFile(
      "colltestd_auth_tokens",
      absl::StrCat("# identities of the auth test\n", "dash   viewer ", kViewer, "\n",
                   "ci-a   runner ", kRunnerA, "\n", "ci-b   runner ", kRunnerB, "\n\n",
                   "root   admin  ", kAdmin, "\n"));
}

std::unique_ptr<grpc::ClientContext> As(const std::string& token) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
  return context;
}

v1::RunRequest SmallRun(const std::string& fault = "") {
  v1::RunRequest request = LamportRun(2, 1, 1024);
  request.mutable_spec()->set_fault(fault);
  return request;
}

class AuthTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = Daemon::Start(2, {"--token-file", WriteTokenFile(), "--allow-fault-injection"});
    ASSERT_NE(daemon_, nullptr);
  }
  static void TearDownTestSuite() { daemon_.reset(); }

  static grpc::Status Run(const std::string& token, const v1::RunRequest& request,
                          v1::RunResult* result) {
    return daemon_->Stub()->Run(As(token).get(), request, result);
  }
  static grpc::Status Cancel(const std::string& token, const std::string& run_id) {
    v1::CancelRequest request;
    request.set_run_id(run_id);
    v1::CancelResponse response;
    return daemon_->Stub()->Cancel(As(token).get(), request, &response);
  }

  static std::unique_ptr<Daemon> daemon_;
};

std::unique_ptr<Daemon> AuthTest::daemon_;

TEST_F(AuthTest, AMissingOrUnknownTokenIsUnauthenticated) {
  v1::ListDevicesResponse devices;
  EXPECT_EQ(daemon_->Stub()->ListDevices(As("").get(), {}, &devices).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(
      daemon_->Stub()->ListDevices(As("not-a-token-at-all-000").get(), {}, &devices).error_code(),
      grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(daemon_->Stub()->ListDevices(As(kViewer).get(), {}, &devices).ok());
}

TEST_F(AuthTest, AViewerReadsButCannotRun) {
  v1::RunResult run;
  const grpc::Status status = Run(kViewer, SmallRun(), &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(status.error_message(), "Run needs role runner; dash has role viewer");
  v1::ListRunsResponse runs;
  EXPECT_TRUE(daemon_->Stub()->ListRuns(As(kViewer).get(), {}, &runs).ok());
}

TEST_F(AuthTest, RunsRecordTheirOwnerUnderUnguessableIds) {
  v1::RunResult a, b;
  ASSERT_TRUE(Run(kRunnerA, SmallRun(), &a).ok());
  ASSERT_TRUE(Run(kRunnerB, SmallRun(), &b).ok());
  const std::regex id("r-[0-9a-f]{32}");
  EXPECT_TRUE(std::regex_match(a.run_id(), id)) << a.run_id();
  EXPECT_TRUE(std::regex_match(b.run_id(), id)) << b.run_id();
  EXPECT_NE(a.run_id(), b.run_id());
  EXPECT_EQ(a.owner(), "ci-a");

  v1::GetRunRequest get;
  get.set_run_id(b.run_id());
  v1::RunResult got;
  ASSERT_TRUE(daemon_->Stub()->GetRun(As(kViewer).get(), get, &got).ok());
  EXPECT_EQ(got.owner(), "ci-b");
  v1::ListRunsRequest list;
  list.set_limit(2);
  v1::ListRunsResponse runs;
  ASSERT_TRUE(daemon_->Stub()->ListRuns(As(kViewer).get(), list, &runs).ok());
  ASSERT_EQ(runs.runs_size(), 2);
  EXPECT_EQ(runs.runs(0).owner(), "ci-b");
  EXPECT_EQ(runs.runs(1).owner(), "ci-a");
}

// Runner B may not stop runner A's sweep; an admin may. The sweep is long (128 cases) so that it
// is still queued or running when the cancels arrive.
TEST_F(AuthTest, OnlyTheOwnerOrAnAdminCancelsARun) {
  v1::RunRequest request = SmallRun();
  request.mutable_spec()->clear_variants();
  for (v1::Variant v : {v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL, v1::VARIANT_LAMPORT,
                        v1::VARIANT_LAMPORT_TB}) {
    request.mutable_spec()->add_variants(v);
  }
  for (uint32_t m = 2; m <= 32; ++m) request.mutable_spec()->add_m(m);
  auto context = As(kRunnerA);
  auto stub = daemon_->Stub();
  std::unique_ptr<grpc::ClientReader<v1::SweepEvent>> sweep = stub->Sweep(context.get(), request);
  v1::SweepEvent event;
  ASSERT_TRUE(sweep->Read(&event));
  const std::string run_id = event.run_id();

  const grpc::Status denied = Cancel(kRunnerB, run_id);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(denied.error_message(), "run " + run_id +
                                        " belongs to ci-a; ci-b (role runner) may cancel only "
                                        "its own runs");
  EXPECT_TRUE(Cancel(kAdmin, run_id).ok());
  while (sweep->Read(&event)) {
  }
  EXPECT_TRUE(sweep->Finish().ok());
  EXPECT_EQ(event.summary().state(), v1::RUN_STATE_CANCELLED);
  EXPECT_LT(event.summary().cases_size(), 128);
  EXPECT_TRUE(Cancel(kRunnerA, run_id).ok()) << "the owner may cancel (a finished run is left)";
}

TEST_F(AuthTest, OnlyAnAdminInjectsFaults) {
  v1::RunResult run;
  const grpc::Status denied = Run(kRunnerA, SmallRun("delay_rank:1:10"), &run);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(denied.error_message(), "Run with a fault needs role admin; ci-a has role runner");
  const grpc::Status accepted = Run(kAdmin, SmallRun("delay_rank:1:10"), &run);
  EXPECT_TRUE(accepted.ok()) << accepted.error_message();
  EXPECT_EQ(run.owner(), "root");
}

TEST(ListenGuardTest, ANonLoopbackListenNeedsTlsATokenOrInsecureListen) {
  // Under timeout(1): a colltestd that wrongly starts fails the test (exit 124) instead of hanging.
  auto [code, output] = RunCommand({"timeout", "10", BinDir() + "/colltestd", "--listen",
                                    "0.0.0.0:0", "--backend", "cpu", "--cpu-ranks", "2"});
  EXPECT_EQ(code, 2) << output;
  EXPECT_NE(output.find("--listen 0.0.0.0:0 is not a loopback address"), std::string::npos)
      << output;
  EXPECT_NE(output.find("--insecure-listen"), std::string::npos) << output;

  std::unique_ptr<Daemon> open = Daemon::Start(2, {"--listen", "0.0.0.0:0", "--insecure-listen"});
  ASSERT_NE(open, nullptr);
  const std::string port = open->address().substr(open->address().rfind(':') + 1);
  auto stub = v1::CollectiveTest::NewStub(
      grpc::CreateChannel("127.0.0.1:" + port, grpc::InsecureChannelCredentials()));
  v1::RunResult run;
  ASSERT_TRUE(stub->Run(As("").get(), SmallRun(), &run).ok());
  // Without authentication the owner is the peer as gRPC names it.
  EXPECT_EQ(run.owner().rfind("peer:", 0), 0u) << run.owner();
}

}  // namespace
}  // namespace colltest::testing
