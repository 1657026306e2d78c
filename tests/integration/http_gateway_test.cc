// The HTTP JSON API on a real colltestd: the same service behind both ports (a sweep started over
// HTTP is a run gRPC lists, refused with the same message), the caller forwarded by the gateway
// named as the run's owner, the same tokens and roles, and forwarded identities that only the
// gateway can set.
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The last line of an NDJSON body, parsed.
nlohmann::json LastLine(const std::string& body) {
  std::vector<std::string> lines = absl::StrSplit(body, '\n', absl::SkipEmpty());
  return lines.empty() ? nlohmann::json() : nlohmann::json::parse(lines.back());
}

constexpr char kSweep[] =
    R"({"spec": {"world_size": 2, "m": [1, 8], "n": [256], "variants": ["VARIANT_LAMPORT"],
                 "label": "over http"}})";

TEST(HttpGateway, ASweepOverHttpIsARunOfTheSameServiceOwnedByTheHttpCaller) {
  auto daemon = Daemon::Start(2, {"--http", "127.0.0.1:0"});
  ASSERT_NE(daemon, nullptr);
  const HttpReply sweep = Http(daemon->http_address(), "POST", "/api/v1/runs", kSweep);
  ASSERT_EQ(sweep.status, 200) << sweep.body;
  const nlohmann::json summary = LastLine(sweep.body);
  ASSERT_TRUE(summary.contains("summary")) << sweep.body;
  EXPECT_EQ(summary["summary"]["state"], "RUN_STATE_DONE");
  EXPECT_EQ(summary["summary"]["cases"].size(), 2u);

  grpc::ClientContext context;
  v1::GetRunRequest get;
  get.set_run_id(summary["run_id"]);
  v1::RunResult run;
  ASSERT_TRUE(daemon->Stub()->GetRun(&context, get, &run).ok());
  EXPECT_EQ(run.spec().label(), "over http");
  EXPECT_EQ(run.owner(), "peer:ipv4:127.0.0.1:" + std::to_string(sweep.local_port));
}

TEST(HttpGateway, ARefusedRequestHasTheServicesMessageOnBothPorts) {
  auto daemon = Daemon::Start(2, {"--http", "127.0.0.1:0"});
  ASSERT_NE(daemon, nullptr);
  const HttpReply refused =
      Http(daemon->http_address(), "POST", "/api/v1/runs",
           R"({"spec": {"world_size": 9, "m": [1], "n": [256], "variants": ["VARIANT_LAMPORT"]}})");
  EXPECT_EQ(refused.status, 400);
  const nlohmann::json error = nlohmann::json::parse(refused.body);
  EXPECT_EQ(error["code"], "INVALID_ARGUMENT");

  grpc::ClientContext context;
  v1::RunRequest request = LamportRun(9, 1, 256);
  v1::RunResult run;
  const grpc::Status status = daemon->Stub()->Run(&context, request, &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(error["message"], status.error_message());
  EXPECT_THAT(status.error_message(), StartsWith("world_size = 9"));

  const HttpReply page = Http(daemon->http_address(), "GET", "/api/v1/runs?limit=5000");
  EXPECT_EQ(page.status, 400);
  EXPECT_THAT(page.body, HasSubstr("limit: 5000"));
}

// A gRPC client cannot pass itself off as a gateway caller: without the process's secret the
// forwarded peer is ignored and the run is owned by the client's real address.
TEST(HttpGateway, OnlyTheGatewayCanForwardACaller) {
  auto daemon = Daemon::Start(2, {"--http", "127.0.0.1:0"});
  ASSERT_NE(daemon, nullptr);
  grpc::ClientContext context;
  context.AddMetadata("x-colltest-forwarded-peer", "ipv4:10.9.9.9:1");
  context.AddMetadata("x-colltest-forwarded-secret", "00000000000000000000000000000000");
  v1::RunResult run;
  ASSERT_TRUE(daemon->Stub()->Run(&context, LamportRun(2, 1, 256), &run).ok());
  EXPECT_THAT(run.owner(), StartsWith("peer:ipv4:127.0.0.1:"));
}

constexpr char kViewer[] = "viewer-token-http-000001";
constexpr char kRunner[] = "runner-token-http-000001";

TEST(HttpGateway, TheSameTokensAndRolesAsGrpc) {
  const std::string tokens =
      WriteTokenFile("colltestd_http_tokens",
                     std::string("dash viewer ") + kViewer + "\nci runner " + kRunner + "\n");
  auto daemon = Daemon::Start(2, {"--http", "127.0.0.1:0", "--token-file", tokens});
  ASSERT_NE(daemon, nullptr);
  const std::string http = daemon->http_address();
  EXPECT_EQ(Http(http, "GET", "/api/v1/devices").status, 401);
  EXPECT_EQ(Http(http, "GET", "/api/v1/devices", "", "wrong-token-000000000000").status, 401);
  EXPECT_EQ(Http(http, "GET", "/api/v1/runs", "", kViewer).status, 200);
  const HttpReply denied = Http(http, "POST", "/api/v1/runs", kSweep, kViewer);
  EXPECT_EQ(denied.status, 403);
  EXPECT_THAT(denied.body, HasSubstr("needs role runner"));
  const HttpReply sweep = Http(http, "POST", "/api/v1/runs", kSweep, kRunner);
  ASSERT_EQ(sweep.status, 200) << sweep.body;
  EXPECT_EQ(LastLine(sweep.body)["summary"]["owner"], "ci");
  // The dashboard itself is public: it holds no data, and asks for the token.
  EXPECT_EQ(Http(http, "GET", "/").status, 200);
  EXPECT_EQ(Http(http, "GET", "/metrics").status, 401);
}

}  // namespace
}  // namespace colltest::testing
