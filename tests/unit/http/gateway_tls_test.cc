// The port under TLS: certificates made with the openssl tool, a client with OpenSSL.
#include <stdlib.h>

#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gateway_fixture.h"
#include "gmock/gmock.h"

namespace colltest::http::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class TlsTest : public GatewayTest {
 protected:
  // One set of certificates for the suite: a server certificate for localhost (self-signed), a
  // client CA, a client "alice" it signed, and a self-signed client "mallory".
  static void SetUpTestSuite() {
    std::string pattern = ::testing::TempDir() + "/http_tls_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = new std::string(pattern);
    const std::string quiet = " >/dev/null 2>&1";
    const std::string cd = "cd " + *dir_ + " && ";
    const std::string self_signed = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj ";
    ASSERT_EQ(
        std::system((cd + self_signed + "/CN=localhost -keyout server.key -out server.crt" + quiet)
                        .c_str()),
        0);
    ASSERT_EQ(
        std::system((cd + self_signed + "/CN=test-ca -keyout ca.key -out ca.crt" + quiet).c_str()),
        0);
    ASSERT_EQ(
        std::system((cd + self_signed + "/CN=mallory -keyout mallory.key -out mallory.crt" + quiet)
                        .c_str()),
        0);
    ASSERT_EQ(std::system((cd +
                           "openssl req -newkey rsa:2048 -nodes -subj /CN=alice -keyout alice.key "
                           "-out alice.csr" +
                           quiet +
                           " && openssl x509 -req -in alice.csr -CA "
                           "ca.crt -CAkey ca.key -CAcreateserial -days 1 -out alice.crt" +
                           quiet)
                              .c_str()),
              0);
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) std::system(("rm -rf " + *dir_).c_str());
    delete dir_;
    dir_ = nullptr;
  }
  static std::string File(const std::string& name) { return *dir_ + "/" + name; }

  GatewayOptions TlsOptions(bool mutual) {
    GatewayOptions options = Options();
    options.tls_cert = File("server.crt");
    options.tls_key = File("server.key");
    if (mutual) options.tls_client_ca = File("ca.crt");
    return options;
  }
  TlsClient Client(const std::string& name = "") {
    TlsClient client{File("server.crt"), "", ""};
    if (!name.empty()) {
      client.cert = File(name + ".crt");
      client.key = File(name + ".key");
    }
    return client;
  }

  static std::string* dir_;
};

std::string* TlsTest::dir_ = nullptr;

TEST_F(TlsTest, ServesOverTls) {
  StartGateway(TlsOptions(/*mutual=*/false));
  const absl::StatusOr<std::string> raw =
      TlsExchange(address(), Client(), RequestText("GET", "/healthz"));
  ASSERT_TRUE(raw.ok()) << raw.status();
  const absl::StatusOr<HttpResponse> response = ParseResponse(*raw);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "ok\n");
}

TEST_F(TlsTest, PlainHttpOnTheTlsPortGetsNoReply) {
  StartGateway(TlsOptions(/*mutual=*/false));
  const absl::StatusOr<HttpResponse> response = Exchange(address(), RequestText("GET", "/healthz"));
  EXPECT_FALSE(response.ok() && response->status == 200);
}

TEST_F(TlsTest, VerifiedClientCnIsForwardedAndAClientCannotForgeIt) {
  StartGateway(TlsOptions(/*mutual=*/true));
  const absl::StatusOr<std::string> raw =
      TlsExchange(address(), Client("alice"),
                  RequestText("GET", "/api/v1/devices", {{"X-Colltest-Forwarded-Cn", "mallory"}}));
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_THAT(*raw, StartsWith("HTTP/1.1 200"));
  std::vector<std::string> cns;
  for (const auto& [key, value] : fake_.service.last_metadata()) {
    if (key == "x-colltest-forwarded-cn") cns.push_back(value);
  }
  EXPECT_THAT(cns, ElementsAre("alice"));
}

TEST_F(TlsTest, WithoutAClientCertificateNoRequestIsServed) {
  StartGateway(TlsOptions(/*mutual=*/true));
  const absl::StatusOr<std::string> raw =
      TlsExchange(address(), Client(), RequestText("GET", "/healthz"));
  EXPECT_FALSE(raw.ok() && absl::StartsWith(*raw, "HTTP/1.1 200")) << *raw;
}

TEST_F(TlsTest, AClientCertificateOfAnotherCaIsRefused) {
  StartGateway(TlsOptions(/*mutual=*/true));
  const absl::StatusOr<std::string> raw =
      TlsExchange(address(), Client("mallory"), RequestText("GET", "/healthz"));
  EXPECT_FALSE(raw.ok() && absl::StartsWith(*raw, "HTTP/1.1 200")) << *raw;
}

TEST_F(TlsTest, WithoutMutualTlsNoCnIsForwarded) {
  StartGateway(TlsOptions(/*mutual=*/false));
  const absl::StatusOr<std::string> raw =
      TlsExchange(address(), Client("alice"), RequestText("GET", "/api/v1/devices"));
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(fake_.service.last_metadata().count("x-colltest-forwarded-cn"), 0u);
}

TEST_F(TlsTest, AMissingCertificateFailsTheStartNamingTheFile) {
  GatewayOptions options = TlsOptions(/*mutual=*/false);
  options.tls_cert = File("absent.crt");
  const absl::Status status = Gateway::Start(options).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("absent.crt"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("127.0.0.1:0"));
}

TEST_F(TlsTest, AKeyThatDoesNotMatchFailsTheStart) {
  GatewayOptions options = TlsOptions(/*mutual=*/false);
  options.tls_key = File("ca.key");
  const absl::Status status = Gateway::Start(options).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("ca.key"));
}

}  // namespace
}  // namespace colltest::http::testing
