// The JSON API end to end: HTTP request -> gateway -> in-process fake service -> JSON reply.
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gateway_fixture.h"
#include "gmock/gmock.h"

namespace colltest::http::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::StartsWith;

class ApiTest : public GatewayTest {
 protected:
  void SetUp() override { StartGateway(Options()); }
};

// The values of metadata key `key` the fake received on its last call.
std::vector<std::string> MetadataValues(const FakeService& service, const std::string& key) {
  std::vector<std::string> values;
  for (const auto& [k, v] : service.last_metadata()) {
    if (k == key) values.push_back(v);
  }
  return values;
}

TEST_F(ApiTest, DevicesRoundTripWithProtoFieldNames) {
  const HttpResponse response = Get(address(), "/api/v1/devices");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.Header("content-type"), "application/json");
  EXPECT_EQ(response.Header("x-content-type-options"), "nosniff");
  // Proto field names, 64-bit integers as strings, enums by name, defaults printed.
  EXPECT_THAT(response.body, HasSubstr("\"memory_bytes\":\"1099511627776\""));
  EXPECT_THAT(response.body, HasSubstr("\"max_world_size\":8"));
  EXPECT_THAT(response.body, HasSubstr("\"variants\":[\"VARIANT_LAMPORT\"]"));
  EXPECT_THAT(response.body, HasSubstr("\"pci_bus_id\":\"\""));
  EXPECT_THAT(response.body, ::testing::Not(HasSubstr("memoryBytes")));
  v1::ListDevicesResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(response.body, &parsed).ok());
  EXPECT_EQ(parsed.SerializeAsString(), FakeService::Devices().SerializeAsString());
}

TEST_F(ApiTest, RunsQueryParametersBecomeListRunsRequest) {
  const HttpResponse response =
      Get(address(),
          "/api/v1/runs?label=nightly+h100%2Fa&state=RUN_STATE_DONE&since_unix_ms=1764547200000"
          "&variant=VARIANT_LAMPORT&limit=5&page_token=abc&machine_key=h200x8-1a2b");
  ASSERT_EQ(response.status, 200) << response.body;
  const auto request = fake_.service.last_request<v1::ListRunsRequest>();
  EXPECT_EQ(request.label(), "nightly h100/a");
  EXPECT_EQ(request.state(), v1::RUN_STATE_DONE);
  EXPECT_EQ(request.since_unix_ms(), 1764547200000);
  EXPECT_EQ(request.variant(), v1::VARIANT_LAMPORT);
  EXPECT_EQ(request.limit(), 5u);
  EXPECT_EQ(request.page_token(), "abc");
  EXPECT_EQ(request.machine_key(), "h200x8-1a2b");
  EXPECT_THAT(response.body, HasSubstr("\"created_unix_ms\":\"1764547200000\""));
  EXPECT_THAT(response.body, HasSubstr("\"next_page_token\":\"next\""));
}

TEST_F(ApiTest, BadQueryParameterIs400NamingIt) {
  for (const auto& [query, name] :
       std::vector<std::pair<std::string, std::string>>{{"colour=red", "colour"},
                                                        {"state=DONE", "state"},
                                                        {"limit=ten", "limit"},
                                                        {"limit=-1", "limit"},
                                                        {"since_unix_ms=1.5", "since_unix_ms"},
                                                        {"limit=1&limit=2", "limit"},
                                                        {"label=%zz", "label"}}) {
    const HttpResponse response = Get(address(), "/api/v1/runs?" + query);
    EXPECT_EQ(response.status, 400) << query;
    EXPECT_EQ(ErrorCode(response), "INVALID_ARGUMENT") << query;
    EXPECT_THAT(ErrorMessage(response), HasSubstr("\"" + name + "\"")) << query;
  }
}

TEST_F(ApiTest, GetRunById) {
  const HttpResponse response = Get(address(), "/api/v1/runs/r-42");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(fake_.service.last_request<v1::GetRunRequest>().run_id(), "r-42");
  v1::RunResult run;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(response.body, &run).ok());
  EXPECT_EQ(run.run_id(), "r-42");
  EXPECT_EQ(run.state(), v1::RUN_STATE_DONE);
  EXPECT_THAT(response.body, HasSubstr("\"state\":\"RUN_STATE_DONE\""));
}

TEST_F(ApiTest, ServiceErrorsMapToHttpStatuses) {
  struct Case {
    std::string run_id;
    int http;
    std::string code;
  };
  for (const Case& c :
       {Case{"missing", 404, "NOT_FOUND"}, Case{"bad", 400, "INVALID_ARGUMENT"},
        Case{"denied", 403, "PERMISSION_DENIED"}, Case{"busy", 429, "RESOURCE_EXHAUSTED"},
        Case{"down", 503, "UNAVAILABLE"}}) {
    const HttpResponse response = Get(address(), "/api/v1/runs/" + c.run_id);
    EXPECT_EQ(response.status, c.http) << c.run_id;
    EXPECT_EQ(response.Header("content-type"), "application/json") << c.run_id;
    EXPECT_EQ(ErrorCode(response), c.code) << c.run_id;
  }
  // The service's message verbatim: it names the field and the limit.
  EXPECT_EQ(ErrorMessage(Get(address(), "/api/v1/runs/bad")), kBadRunMessage);
}

TEST_F(ApiTest, ForwardsAuthorizationAndPeerButNoOtherHeader) {
  int local_port = 0;
  const absl::StatusOr<HttpResponse> response =
      Exchange(address(),
               RequestText("GET", "/api/v1/devices",
                           {{"Authorization", "Bearer t0ken"},
                            {"X-Colltest-Forwarded-Peer", "ipv4:10.6.6.6:1"},
                            {"X-Colltest-Forwarded-Cn", "admin"},
                            {"X-Colltest-Forwarded-Secret", "forged"},
                            {"X-Other", "1"}}),
               &local_port);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->status, 200) << response->body;
  EXPECT_THAT(MetadataValues(fake_.service, "authorization"), ElementsAre("Bearer t0ken"));
  EXPECT_THAT(MetadataValues(fake_.service, "x-colltest-forwarded-peer"),
              ElementsAre(absl::StrCat("ipv4:127.0.0.1:", local_port)));
  EXPECT_THAT(MetadataValues(fake_.service, "x-colltest-forwarded-cn"), IsEmpty());
  // The gateway's own secret, never the client's.
  EXPECT_THAT(MetadataValues(fake_.service, "x-colltest-forwarded-secret"),
              ElementsAre(kTestSecret));
  EXPECT_THAT(MetadataValues(fake_.service, "x-other"), IsEmpty());
}

TEST_F(ApiTest, NoAuthorizationHeaderNoAuthorizationMetadata) {
  ASSERT_EQ(Get(address(), "/api/v1/devices").status, 200);
  EXPECT_THAT(MetadataValues(fake_.service, "authorization"), IsEmpty());
  EXPECT_THAT(MetadataValues(fake_.service, "x-colltest-forwarded-peer"),
              ElementsAre(StartsWith("ipv4:127.0.0.1:")));
}

TEST_F(ApiTest, NonAsciiAuthorizationIs401WithoutCallingTheService) {
  const HttpResponse response =
      Get(address(), "/api/v1/runs/r-1", {{"Authorization", "Bearer t\xc3\xb6ken"}});
  EXPECT_EQ(response.status, 401);
  EXPECT_EQ(ErrorCode(response), "UNAUTHENTICATED");
}

TEST_F(ApiTest, PostBodiesQueryAndPathReachTheService) {
  HttpResponse response =
      Post(address(), "/api/v1/health", R"({"pairs": true, "devices": [0, 1], "timeout_ms": 9})");
  ASSERT_EQ(response.status, 200) << response.body;
  auto health = fake_.service.last_request<v1::HealthRequest>();
  EXPECT_TRUE(health.pairs());
  EXPECT_THAT(health.devices(), ElementsAre(0u, 1u));
  EXPECT_EQ(health.timeout_ms(), 9u);
  EXPECT_THAT(response.body, HasSubstr("\"status\":\"CASE_STATUS_OK\""));

  response = Post(address(), "/api/v1/runs/r-9/cancel", "");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(fake_.service.last_request<v1::CancelRequest>().run_id(), "r-9");
  EXPECT_EQ(response.body, "{\"state\":\"RUN_STATE_RUNNING\"}\n");

  response = Post(address(), "/api/v1/baselines", R"({"run_id": "r-3", "name": "gold"})");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(fake_.service.last_request<v1::SetBaselineRequest>().name(), "gold");

  response = Get(address(), "/api/v1/baselines?machine_key=m-1");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(fake_.service.last_request<v1::ListBaselinesRequest>().machine_key(), "m-1");

  response = Get(address(), "/api/v1/compare?run_a=r-1&run_b=r-2&threshold=0.1");
  ASSERT_EQ(response.status, 200) << response.body;
  const auto compare = fake_.service.last_request<v1::CompareRequest>();
  EXPECT_EQ(compare.run_b(), "r-2");
  EXPECT_DOUBLE_EQ(compare.threshold(), 0.1);
}

TEST_F(ApiTest, SweepStreamsOneJsonObjectPerLine) {
  const HttpResponse response =
      Post(address(), "/api/v1/runs", R"({"spec": {"world_size": 2, "m": [1, 64]}})");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.Header("content-type"), "application/x-ndjson");
  EXPECT_TRUE(response.chunked);
  EXPECT_EQ(response.Header("x-content-type-options"), "nosniff");
  EXPECT_THAT(fake_.service.last_request<v1::RunRequest>().spec().m(), ElementsAre(1u, 64u));
  EXPECT_THAT(response.body, ::testing::EndsWith("\n"));
  // Empty lines are the heartbeat's, sent when an event takes over 250 ms (a busy machine).
  std::vector<std::string> lines = absl::StrSplit(response.body, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << response.body;
  std::vector<v1::SweepEvent> events(3);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(lines[i], &events[i]).ok()) << lines[i];
    EXPECT_EQ(events[i].run_id(), "r-7");
  }
  EXPECT_TRUE(events[0].has_progress());
  EXPECT_TRUE(events[1].has_result());
  EXPECT_EQ(events[1].result().m(), 64u);
  EXPECT_TRUE(events[2].has_summary());
  // A oneof prints only its member that is set.
  EXPECT_THAT(lines[0], ::testing::Not(HasSubstr("summary")));
}

TEST_F(ApiTest, SweepRefusedBeforeItsFirstEventIsAnOrdinaryError) {
  const HttpResponse response = Post(address(), "/api/v1/runs", R"({"spec": {"label": "refuse"}})");
  EXPECT_EQ(response.status, 400);
  EXPECT_FALSE(response.chunked);
  EXPECT_EQ(response.Header("content-type"), "application/json");
  EXPECT_EQ(ErrorCode(response), "INVALID_ARGUMENT");
  EXPECT_EQ(ErrorMessage(response), kRefusedSweepMessage);
}

TEST_F(ApiTest, SweepErrorAfterItsFirstEventEndsTheStreamWithAnErrorLine) {
  const HttpResponse response =
      Post(address(), "/api/v1/runs", R"({"spec": {"label": "fail-late"}})");
  ASSERT_EQ(response.status, 200);
  std::vector<std::string> lines = absl::StrSplit(response.body, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << response.body;
  EXPECT_EQ(lines[1], R"({"error":{"code":"ABORTED","message":"worker died"}})");
}

TEST_F(ApiTest, SweepToAnHttp10ClientEndsWithTheConnection) {
  const std::string body = R"({"spec": {"world_size": 2}})";
  const absl::StatusOr<HttpResponse> response = Exchange(
      address(), absl::StrCat("POST /api/v1/runs HTTP/1.0\r\nContent-Type: application/json\r\n"
                              "Content-Length: ",
                              body.size(), "\r\n\r\n", body));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_FALSE(response->chunked);
  EXPECT_EQ(
      std::vector<std::string>(absl::StrSplit(response->body, '\n', absl::SkipEmpty())).size(), 3u)
      << response->body;
}

// Sends a sweep with `label` (slow or quiet) on `connection` and reads its first event.
void StartSweep(Connection& connection, const std::string& label) {
  ASSERT_TRUE(connection.Send(
      RequestText("POST", "/api/v1/runs", {}, R"({"spec": {"label": ")" + label + R"("}})")));
  const std::string head = connection.ReadUntil("\r\n\r\n");
  ASSERT_THAT(head, StartsWith("HTTP/1.1 200"));
  ASSERT_THAT(connection.ReadUntil("}\n"), HasSubstr("\"progress\""));
}

bool WaitFor(const std::atomic<bool>& flag, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!flag && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return flag;
}

TEST_F(ApiTest, ClientGoingAwayCancelsTheSweep) {
  absl::StatusOr<Connection> connection = Connection::Open(address());
  ASSERT_TRUE(connection.ok());
  StartSweep(*connection, "slow");
  EXPECT_FALSE(fake_.service.sweep_cancelled);
  connection->Close();
  // The slow sweep would stream for 10 s; the gateway's next writes fail and it cancels the call.
  EXPECT_TRUE(WaitFor(fake_.service.sweep_cancelled, std::chrono::seconds(5)));
}

TEST_F(ApiTest, ClientGoingAwayBetweenEventsCancelsTheSweep) {
  absl::StatusOr<Connection> connection = Connection::Open(address());
  ASSERT_TRUE(connection.ok());
  // Quiet: one event, then none for 10 s (a long case); only the heartbeat can notice the close.
  StartSweep(*connection, "quiet");
  connection->Close();
  const auto closed = std::chrono::steady_clock::now();
  EXPECT_TRUE(WaitFor(fake_.service.sweep_cancelled, std::chrono::seconds(5)));
  // Two beats of 250 ms; the margin is for a busy machine.
  EXPECT_LT(std::chrono::steady_clock::now() - closed, std::chrono::seconds(2));
}

TEST_F(ApiTest, ClientHangingUpCancelsAHealthCheckThatWaits) {
  absl::StatusOr<Connection> connection = Connection::Open(address());
  ASSERT_TRUE(connection.ok());
  ASSERT_TRUE(connection->Send(RequestText("POST", "/api/v1/health", {}, R"({"devices": [99]})",
                                           /*with_body=*/true)));
  // Device 99: the fake's check waits 10 s unless cancelled.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(fake_.service.health_cancelled);
  connection->Close();
  const auto closed = std::chrono::steady_clock::now();
  EXPECT_TRUE(WaitFor(fake_.service.health_cancelled, std::chrono::seconds(5)));
  EXPECT_LT(std::chrono::steady_clock::now() - closed, std::chrono::seconds(2));
}

TEST_F(ApiTest, HealthCheckOfAClientThatStaysIsAnswered) {
  const HttpResponse response = Post(address(), "/api/v1/health", "{}");
  EXPECT_EQ(response.status, 200) << response.body;
  EXPECT_FALSE(fake_.service.health_cancelled);
}

TEST_F(ApiTest, QuietSweepSendsEmptyLinesBetweenEvents) {
  absl::StatusOr<Connection> connection = Connection::Open(address());
  ASSERT_TRUE(connection.ok());
  StartSweep(*connection, "quiet");
  // A beat is the one-byte chunk "\n": "1\r\n\n\r\n".
  EXPECT_THAT(connection->ReadUntil("1\r\n\n\r\n"), HasSubstr("1\r\n\n\r\n"));
}

TEST_F(ApiTest, StoppingTheGatewayCancelsAStreamingSweep) {
  absl::StatusOr<Connection> connection = Connection::Open(address());
  ASSERT_TRUE(connection.ok());
  // Quiet: no event to write, so only the gateway's own cancel can end the call (a failing write
  // would cancel it too).
  StartSweep(*connection, "quiet");
  const auto start = std::chrono::steady_clock::now();
  gateway_.reset();  // with the client still reading
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(WaitFor(fake_.service.sweep_cancelled, std::chrono::seconds(5)));
}

TEST_F(ApiTest, BodyOverOneMebibyteIs413) {
  const std::string body(kMaxBodyBytes + 1, ' ');
  const HttpResponse response = Post(address(), "/api/v1/runs", body);
  EXPECT_EQ(response.status, 413);
  EXPECT_EQ(ErrorCode(response), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(ErrorMessage(response), "request body exceeds 1048576 bytes");
}

TEST_F(ApiTest, ChunkedBodyOverOneMebibyteIs413) {
  // No declared length: the limit is found while reading.
  std::string request =
      "POST /api/v1/health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
      "Content-Type: application/json\r\n"
      "Connection: close\r\n\r\n";
  const std::string chunk(64 * 1024, ' ');
  for (int i = 0; i < 17; ++i)
    absl::StrAppend(&request, absl::Hex(chunk.size()), "\r\n", chunk, "\r\n");
  request += "0\r\n\r\n";
  const absl::StatusOr<HttpResponse> response = Exchange(address(), request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 413);
  EXPECT_EQ(ErrorMessage(*response), "request body exceeds 1048576 bytes");
}

TEST_F(ApiTest, BodyOfExactlyOneMebibyteIsRead) {
  const std::string head = R"({"spec": {"label": ")";
  const std::string tail = R"("}})";
  const std::string body =
      head + std::string(kMaxBodyBytes - head.size() - tail.size(), 'x') + tail;
  ASSERT_EQ(body.size(), kMaxBodyBytes);
  const HttpResponse response = Post(address(), "/api/v1/runs", body);
  EXPECT_EQ(response.status, 200) << response.body.substr(0, 200);
  EXPECT_EQ(fake_.service.last_request<v1::RunRequest>().spec().label().size(),
            kMaxBodyBytes - head.size() - tail.size());
}

TEST_F(ApiTest, BodyThatIsNotJsonIs400NamingTheMessage) {
  const HttpResponse response = Post(address(), "/api/v1/runs", "{not json");
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(ErrorCode(response), "INVALID_ARGUMENT");
  EXPECT_THAT(ErrorMessage(response), StartsWith("body: not a colltest.v1.RunRequest: "));
}

TEST_F(ApiTest, UnknownBodyFieldIs400NamingTheField) {
  const HttpResponse response = Post(address(), "/api/v1/runs", R"({"spec": {"colour": 1}})");
  EXPECT_EQ(response.status, 400);
  EXPECT_THAT(ErrorMessage(response), HasSubstr("colour"));
}

TEST_F(ApiTest, UnknownApiPathIs404) {
  for (const char* path : {"/api/v1/nope", "/api/v2/devices", "/api", "/api/v1/runs/r-1/x"}) {
    const HttpResponse response = Get(address(), path);
    EXPECT_EQ(response.status, 404) << path;
    EXPECT_EQ(ErrorCode(response), "NOT_FOUND") << path;
  }
}

TEST_F(ApiTest, WrongMethodIs405WithAllow) {
  struct Case {
    std::string method, path, allow;
  };
  for (const Case& c :
       {Case{"DELETE", "/api/v1/runs", "GET, POST"}, Case{"PUT", "/api/v1/runs/r-1", "GET"},
        Case{"GET", "/api/v1/runs/r-1/cancel", "POST"}, Case{"GET", "/api/v1/health", "POST"},
        Case{"POST", "/metrics", "GET"}}) {
    const absl::StatusOr<HttpResponse> response =
        Exchange(address(), RequestText(c.method, c.path, {}, "", /*with_body=*/true));
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, 405) << c.method << " " << c.path;
    EXPECT_EQ(response->Header("allow"), c.allow) << c.method << " " << c.path;
    EXPECT_EQ(ErrorCode(*response), "UNIMPLEMENTED");
  }
}

class ApiDeadlineTest : public GatewayTest {};

TEST_F(ApiDeadlineTest, UnaryCallPastItsDeadlineIs504) {
  GatewayOptions options = Options();
  options.api_deadline_ms = 200;
  StartGateway(std::move(options));
  const HttpResponse response = Get(address(), "/api/v1/runs/slow");
  EXPECT_EQ(response.status, 504);
  EXPECT_EQ(ErrorCode(response), "DEADLINE_EXCEEDED");
}

}  // namespace
}  // namespace colltest::http::testing
