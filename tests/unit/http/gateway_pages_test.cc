// The port's pages outside the API (/healthz, /metrics, the dashboard's files) and starting.
#include <civetweb.h>

#include <atomic>

#include "absl/strings/escaping.h"
#include "gateway_fixture.h"
#include "gmock/gmock.h"
#include "http/pages.h"

namespace colltest::http::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;
using ::testing::Pair;

class PagesTest : public GatewayTest {};

std::string Basic(const std::string& user_colon_password) {
  return "Basic " + absl::Base64Escape(user_colon_password);
}

TEST_F(PagesTest, HealthzIsOk) {
  StartGateway(Options());
  const HttpResponse response = Get(address(), "/healthz");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "ok\n");
  EXPECT_EQ(response.Header("x-content-type-options"), "nosniff");
}

TEST_F(PagesTest, OneConnectionCarriesSeveralRequests) {
  StartGateway(Options());
  absl::StatusOr<Connection> connection = Connection::Open(address());
  ASSERT_TRUE(connection.ok());
  ASSERT_TRUE(
      connection->Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                       "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const std::string replies = connection->ReadAll();
  EXPECT_EQ(replies.find("HTTP/1.1 200"), 0u) << replies;
  EXPECT_NE(replies.find("HTTP/1.1 200", 1), std::string::npos) << replies;
}

TEST_F(PagesTest, MetricsServeTheRenderedText) {
  GatewayOptions options = Options();
  std::atomic<int> renders{0};
  options.render_metrics = [&renders] {
    ++renders;
    return std::string("colltest_runs{state=\"queued\"} 3\n");
  };
  StartGateway(std::move(options));
  const HttpResponse response = Get(address(), "/metrics");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "colltest_runs{state=\"queued\"} 3\n");
  EXPECT_THAT(response.Header("content-type"), HasSubstr("text/plain"));
  EXPECT_EQ(renders, 1);
}

TEST_F(PagesTest, MetricsNeedBasicAuthWhenChecked) {
  GatewayOptions options = Options();
  options.render_metrics = [] { return std::string("up 1\n"); };
  std::string seen_user, seen_password;
  options.metrics_basic_auth = [&](const std::string& user, const std::string& password) {
    seen_user = user;
    seen_password = password;
    return user == "prom" && password == "s3:cret";
  };
  StartGateway(std::move(options));

  HttpResponse response = Get(address(), "/metrics");
  EXPECT_EQ(response.status, 401);
  EXPECT_EQ(response.Header("www-authenticate"), "Basic realm=\"colltestd\"");
  EXPECT_THAT(response.body, ::testing::Not(HasSubstr("up 1")));

  response = Get(address(), "/metrics", {{"Authorization", Basic("prom:wrong")}});
  EXPECT_EQ(response.status, 401);
  EXPECT_EQ(response.Header("www-authenticate"), "Basic realm=\"colltestd\"");
  EXPECT_EQ(seen_password, "wrong");

  response = Get(address(), "/metrics", {{"Authorization", Basic("prom:s3:cret")}});
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "up 1\n");
  EXPECT_EQ(seen_user, "prom");
  EXPECT_EQ(seen_password, "s3:cret");  // split at the first colon only

  response = Get(address(), "/metrics", {{"Authorization", "Bearer s3:cret"}});
  EXPECT_EQ(response.status, 401);
}

TEST_F(PagesTest, MetricsWithoutARendererAre404) {
  StartGateway(Options());
  EXPECT_EQ(Get(address(), "/metrics").status, 404);
}

TEST_F(PagesTest, AssetsAreServedWithTheirTypeAndHtmlWithAPolicy) {
  static const dashboard::Asset kIndex{"/index.html", "text/html; charset=utf-8",
                                       "<html>hi</html>"};
  static const dashboard::Asset kScript{"/app.js", "text/javascript; charset=utf-8", "go();"};
  GatewayOptions options = Options();
  options.find_asset = [](std::string_view path) -> const dashboard::Asset* {
    if (path == "/" || path == "/index.html") return &kIndex;
    if (path == "/app.js") return &kScript;
    return nullptr;
  };
  StartGateway(std::move(options));

  HttpResponse response = Get(address(), "/");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "<html>hi</html>");
  EXPECT_EQ(response.Header("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(response.Header("cache-control"), "no-cache");
  EXPECT_EQ(response.Header("x-content-type-options"), "nosniff");
  EXPECT_EQ(response.Header("content-security-policy"),
            "default-src 'self'; style-src 'self' 'unsafe-inline'");

  response = Get(address(), "/app.js");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "go();");
  EXPECT_EQ(response.Header("content-type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(response.Header("x-content-type-options"), "nosniff");

  response = Get(address(), "/missing.css");
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(ErrorCode(response), "NOT_FOUND");
}

TEST_F(PagesTest, WithoutAssetsEveryDashboardPathIs404) {
  StartGateway(Options());
  EXPECT_EQ(Get(address(), "/").status, 404);
  EXPECT_EQ(Get(address(), "/index.html").status, 404);
}

TEST_F(PagesTest, BoundAddressHasTheRealPort) {
  StartGateway(Options());
  EXPECT_THAT(address(), ::testing::StartsWith("127.0.0.1:"));
  EXPECT_NE(address(), "127.0.0.1:0");
  EXPECT_EQ(Get(address(), "/healthz").status, 200);
}

TEST_F(PagesTest, StartErrorsNameTheAddress) {
  GatewayOptions options = Options();
  options.address = "nonsense";
  EXPECT_EQ(Gateway::Start(options).status().code(), absl::StatusCode::kInvalidArgument);

  StartGateway(Options());
  options.address = address();  // in use
  const absl::Status in_use = Gateway::Start(options).status();
  EXPECT_FALSE(in_use.ok());
  EXPECT_THAT(std::string(in_use.message()), HasSubstr(address()));

  options = Options();
  options.address = "[::1]:0";
  if (mg_check_feature(MG_FEATURES_IPV6) == 0) {
    EXPECT_EQ(Gateway::Start(options).status().code(), absl::StatusCode::kInvalidArgument);
  }

  options = Options();
  options.channel = nullptr;
  EXPECT_EQ(Gateway::Start(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseBasicAuthTest, SplitsAtTheFirstColon) {
  EXPECT_THAT(ParseBasicAuth("Basic " + absl::Base64Escape("a:b:c")), Optional(Pair("a", "b:c")));
  EXPECT_THAT(ParseBasicAuth("basic " + absl::Base64Escape("a:")), Optional(Pair("a", "")));
  EXPECT_EQ(ParseBasicAuth("Basic " + absl::Base64Escape("nocolon")), std::nullopt);
  EXPECT_EQ(ParseBasicAuth("Bearer abc"), std::nullopt);
  EXPECT_EQ(ParseBasicAuth("Basic !!!"), std::nullopt);
}

}  // namespace
}  // namespace colltest::http::testing
