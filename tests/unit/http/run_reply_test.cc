// GET /api/v1/runs/{run_id} through the gateway: the run's JSON streamed, and reads beyond
// GatewayOptions.max_run_reads answered 503 with Retry-After.
#include <chrono>
#include <future>

#include "gateway_fixture.h"
#include "gmock/gmock.h"
#include "http/json_codec.h"

namespace colltest::http::testing {
namespace {

using ::testing::HasSubstr;

class RunReplyTest : public GatewayTest {};

TEST_F(RunReplyTest, RunWithCasesIsTheWholeDocumentAndANewline) {
  StartGateway(Options());
  const HttpResponse response = Get(address(), "/api/v1/runs/with-cases");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.Header("content-type"), "application/json");
  EXPECT_EQ(response.Header("x-content-type-options"), "nosniff");
  EXPECT_EQ(response.body, ToJson(FakeService::RunWithCases("with-cases")) + "\n");
}

TEST_F(RunReplyTest, ReadBeyondTheLimitIs503WithRetryAfter) {
  GatewayOptions options = Options();
  options.max_run_reads = 1;
  options.run_read_wait_ms = 200;
  options.api_deadline_ms = 3000;  // how long the "slow" read holds the only turn
  StartGateway(std::move(options));
  auto slow = std::async(std::launch::async, [&] { return Get(address(), "/api/v1/runs/slow"); });
  // The slow read takes its turn first; any read within its 3 s then waits 200 ms and is refused.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto start = std::chrono::steady_clock::now();
  const HttpResponse refused = Get(address(), "/api/v1/runs/r-1");
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(refused.Header("retry-after"), "1");
  EXPECT_EQ(ErrorCode(refused), "UNAVAILABLE");
  EXPECT_THAT(ErrorMessage(refused), HasSubstr("1 reads of runs"));
  EXPECT_EQ(slow.get().status, 504);
  // The turn is back: the next read is served.
  EXPECT_EQ(Get(address(), "/api/v1/runs/r-1").status, 200);
}

}  // namespace
}  // namespace colltest::http::testing
