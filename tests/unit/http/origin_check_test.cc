#include "http/origin_check.h"

#include "gtest/gtest.h"
#include "http/status_map.h"

namespace colltest::http {
namespace {

BrowserPolicy AuthOff() {
  BrowserPolicy policy;
  policy.check_host = true;
  policy.listen_host = "127.0.0.1";
  policy.allowed_hosts = {"colltest.lab.example", "proxy.example:8443"};
  return policy;
}

TEST(CheckHost, LoopbackNamesAndTheListenHostOnTheServedPort) {
  const BrowserPolicy policy = AuthOff();
  for (const char* host :
       {"127.0.0.1:9464", "localhost:9464", "LocalHost:9464", "[::1]:9464", "127.0.0.2:9464"}) {
    EXPECT_TRUE(CheckHost(host, 9464, policy).ok()) << host;
  }
  EXPECT_FALSE(CheckHost("127.0.0.1:9465", 9464, policy).ok());
  EXPECT_FALSE(CheckHost("127.0.0.1", 9464, policy).ok());  // port 80
  EXPECT_TRUE(CheckHost("localhost", 80, policy).ok());
}

TEST(CheckHost, RefusesOtherNamesNamingTheHeader) {
  const absl::Status refused = CheckHost("evil.example:9464", 9464, AuthOff());
  EXPECT_EQ(HttpStatusOf(refused), 403);
  EXPECT_NE(refused.message().find("Host header \"evil.example:9464\""), std::string::npos)
      << refused;
  EXPECT_NE(refused.message().find("--http-allowed-host"), std::string::npos) << refused;
  EXPECT_EQ(HttpStatusOf(CheckHost(nullptr, 9464, AuthOff())), 403);
  EXPECT_FALSE(CheckHost("127.0.0.1:9464@evil", 9464, AuthOff()).ok());
}

TEST(CheckHost, AllowedHostsWithAndWithoutAPort) {
  const BrowserPolicy policy = AuthOff();
  EXPECT_TRUE(CheckHost("colltest.lab.example:1234", 9464, policy).ok());
  EXPECT_TRUE(CheckHost("colltest.lab.example", 9464, policy).ok());
  EXPECT_TRUE(CheckHost("proxy.example:8443", 9464, policy).ok());
  EXPECT_FALSE(CheckHost("proxy.example:8080", 9464, policy).ok());
}

TEST(CheckHost, AnyAddressNamesNoHostAndAuthOnChecksNothing) {
  BrowserPolicy policy = AuthOff();
  policy.listen_host = "0.0.0.0";
  EXPECT_FALSE(CheckHost("0.0.0.0:9464", 9464, policy).ok());
  policy.listen_host = "node1.lab";
  EXPECT_TRUE(CheckHost("NODE1.lab:9464", 9464, policy).ok());
  policy.check_host = false;
  EXPECT_TRUE(CheckHost("anything:1", 9464, policy).ok());
}

TEST(CheckOrigin, SameOriginOrAllowed) {
  const BrowserPolicy policy = AuthOff();
  EXPECT_TRUE(CheckOrigin(nullptr, "127.0.0.1:9464", policy).ok());
  EXPECT_TRUE(CheckOrigin("http://127.0.0.1:9464", "127.0.0.1:9464", policy).ok());
  EXPECT_TRUE(CheckOrigin("http://localhost", "localhost:80", policy).ok());
  EXPECT_TRUE(CheckOrigin("https://colltest.lab.example", "127.0.0.1:9464", policy).ok());
  for (const char* origin : {"http://evil.example", "null", "http://127.0.0.1:9465",
                             "https://127.0.0.1:9464", "127.0.0.1:9464"}) {
    const absl::Status refused = CheckOrigin(origin, "127.0.0.1:9464", policy);
    EXPECT_EQ(HttpStatusOf(refused), 403) << origin;
    EXPECT_NE(refused.message().find("Origin header"), std::string::npos) << refused;
  }
  BrowserPolicy tls = policy;
  tls.tls = true;
  EXPECT_TRUE(CheckOrigin("https://127.0.0.1:9464", "127.0.0.1:9464", tls).ok());
}

TEST(CheckJsonContentType, OnlyJson) {
  EXPECT_TRUE(CheckJsonContentType("application/json").ok());
  EXPECT_TRUE(CheckJsonContentType("Application/JSON; charset=utf-8").ok());
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded",
                           "multipart/form-data; boundary=x", "application/jsonx"}) {
    const absl::Status refused = CheckJsonContentType(type);
    EXPECT_EQ(HttpStatusOf(refused), 415) << type;
    EXPECT_NE(refused.message().find("Content-Type header"), std::string::npos) << refused;
  }
  EXPECT_EQ(HttpStatusOf(CheckJsonContentType(nullptr)), 415);
}

}  // namespace
}  // namespace colltest::http
