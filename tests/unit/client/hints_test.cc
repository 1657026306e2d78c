// The statuses below are the texts gRPC and colltestd give in each situation, as observed against
// a real colltestd (tests/integration/cli_hints_test.cc checks the first three end to end).
#include "client/commands/hints.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kAddr[] = "127.0.0.1:7777";

std::string Unavailable(const std::string& last_error) {
  return "failed to connect to all addresses; last error: " + last_error;
}

TEST(ExplainFailureTest, RefusedSaysColltestdMayNotRunAndHowToPointElsewhere) {
  const absl::Status status = absl::UnavailableError(Unavailable(
      "UNKNOWN: ipv4:127.0.0.1:7777: Failed to connect to remote host: Connection refused"));
  const ExplainedFailure e = ExplainFailure(status, kAddr);
  EXPECT_EQ(e.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(e.status.message(), "server 127.0.0.1:7777: " + std::string(status.message()));
  EXPECT_EQ(e.hint,
            "colltestd may not be running at 127.0.0.1:7777: start it (colltestd --listen "
            "127.0.0.1:7777) or point the client elsewhere with --server HOST:PORT or the "
            "COLLTEST_SERVER environment variable");
}

TEST(ExplainFailureTest, UnreachableNetworkIsLikeRefused) {
  const ExplainedFailure e = ExplainFailure(
      absl::UnavailableError(Unavailable("UNKNOWN: ipv4:10.0.0.1:50051: Failed to connect to "
                                         "remote host: Network is unreachable")),
      "10.0.0.1:50051");
  EXPECT_THAT(e.hint, StartsWith("colltestd may not be running at 10.0.0.1:50051"));
}

TEST(ExplainFailureTest, HttpPortIsNotColltestd) {
  const ExplainedFailure e =
      ExplainFailure(absl::UnavailableError(
                         Unavailable("UNAVAILABLE: ipv4:127.0.0.1:7777: Failed parsing HTTP/2")),
                     kAddr);
  EXPECT_THAT(std::string(e.status.message()), StartsWith("server 127.0.0.1:7777: "));
  EXPECT_THAT(e.hint, StartsWith("the server at 127.0.0.1:7777 speaks HTTP, not gRPC: it is not "
                                 "colltestd (maybe its --http port"));
  EXPECT_THAT(e.hint, HasSubstr("--server HOST:PORT or the COLLTEST_SERVER"));
}

// colltestd's --health-listen port (a C++ gRPC server without the service) answers without text;
// other gRPC servers say "unknown service".
TEST(ExplainFailureTest, UnimplementedIsAnotherServer) {
  for (const char* message : {"", "unknown service colltest.v1.CollectiveTest"}) {
    const ExplainedFailure e = ExplainFailure(absl::UnimplementedError(message), kAddr);
    EXPECT_EQ(e.status.code(), absl::StatusCode::kUnimplemented);
    EXPECT_EQ(e.status.message(), std::string("server 127.0.0.1:7777: ") +
                                      (*message == '\0' ? "no such service or method" : message));
    EXPECT_THAT(e.hint, StartsWith("the server at 127.0.0.1:7777 does not serve "
                                   "colltest.v1.CollectiveTest: it is not colltestd (maybe its "
                                   "--health-listen port"));
  }
}

TEST(ExplainFailureTest, Http2ServerThatIsNotGrpcIsLikeTheHttpPort) {
  const ExplainedFailure e =
      ExplainFailure(absl::UnimplementedError("Received http2 header with status: 404"), kAddr);
  EXPECT_THAT(e.hint, HasSubstr("speaks HTTP, not gRPC"));
}

TEST(ExplainFailureTest, SilentServerIsNotColltestdOrStuck) {
  const ExplainedFailure e = ExplainFailure(
      absl::UnavailableError(Unavailable("UNKNOWN: ipv4:127.0.0.1:7777: connection attempt timed "
                                         "out before receiving SETTINGS frame")),
      kAddr);
  EXPECT_THAT(e.hint, StartsWith("127.0.0.1:7777 accepted the connection but never answered"));
}

TEST(ExplainFailureTest, DnsFailureSaysTheNameDoesNotResolve) {
  const ExplainedFailure e =
      ExplainFailure(absl::UnavailableError(
                         "DNS resolution failed for gpu-7:50051: C-ares status is not "
                         "ARES_SUCCESS qtype=A name=gpu-7 is_balancer=0: Domain name not found"),
                     "gpu-7:50051");
  EXPECT_THAT(e.hint, StartsWith("the host name in gpu-7:50051 does not resolve"));
}

TEST(ExplainFailureTest, ClosedAtOnceNamesTheConnectionCapThenTls) {
  // The server's connection cap (the likelier cause), a plaintext client to a TLS server, or a
  // TLS client without the certificate mutual TLS needs.
  for (const char* last : {"UNAVAILABLE: ipv4:127.0.0.1:7777: Socket closed",
                           "UNAVAILABLE: ipv4:127.0.0.1:7777: recvmsg:Connection reset by peer"}) {
    const ExplainedFailure e = ExplainFailure(absl::UnavailableError(Unavailable(last)), kAddr);
    EXPECT_THAT(std::string(e.status.message()), StartsWith("server 127.0.0.1:7777: ")) << last;
    EXPECT_THAT(e.hint, HasSubstr("most likely colltestd was at its connection cap "
                                  "(--max-connections"))
        << last;
    EXPECT_THAT(e.hint, HasSubstr("--tls-ca FILE")) << last;
    EXPECT_THAT(e.hint, HasSubstr("--tls-cert and --tls-key")) << last;
  }
}

TEST(ExplainFailureTest, UntrustedCertificateNamesTlsCa) {
  const ExplainedFailure e =
      ExplainFailure(absl::UnavailableError(Unavailable(
                         "UNKNOWN: ipv4:127.0.0.1:7777: Ssl handshake failed: SSL_ERROR_SSL: "
                         "error:0A000086:SSL routines::certificate verify failed")),
                     kAddr);
  EXPECT_THAT(e.hint, StartsWith("the certificate of 127.0.0.1:7777 is not signed by the CA in "
                                 "--tls-ca"));
}

TEST(ExplainFailureTest, NameMismatchNamesTlsServerName) {
  const ExplainedFailure e = ExplainFailure(
      absl::UnavailableError(
          Unavailable("UNKNOWN: ipv4:127.0.0.1:7777: Peer name foo is not in peer certificate")),
      kAddr);
  EXPECT_THAT(e.hint, HasSubstr("--tls-server-name NAME"));
}

TEST(ExplainFailureTest, TlsToAPlaintextPortSaysItDoesNotSpeakTls) {
  const ExplainedFailure e =
      ExplainFailure(absl::UnavailableError(Unavailable(
                         "UNKNOWN: ipv4:127.0.0.1:7777: Ssl handshake failed: SSL_ERROR_SSL: "
                         "error:0A00010B:SSL routines::wrong version number")),
                     kAddr);
  EXPECT_THAT(e.hint, StartsWith("127.0.0.1:7777 does not speak TLS: leave out --tls-ca"));
}

TEST(ExplainFailureTest, MissingTokenNamesTokenFile) {
  const absl::Status status = absl::UnauthenticatedError(
      "missing \"authorization: Bearer <token>\" metadata (colltest --token-file)");
  const ExplainedFailure e = ExplainFailure(status, kAddr);
  EXPECT_EQ(e.status, status);  // colltestd's own words, kept as they are
  EXPECT_THAT(e.hint, StartsWith("colltestd at 127.0.0.1:7777 requires a token: pass "
                                 "--token-file FILE"));
}

TEST(ExplainFailureTest, UnknownTokenNamesTokenFile) {
  const ExplainedFailure e =
      ExplainFailure(absl::UnauthenticatedError("invalid bearer token"), kAddr);
  EXPECT_THAT(e.hint, StartsWith("colltestd at 127.0.0.1:7777 does not know the token of "
                                 "--token-file"));
}

TEST(ExplainFailureTest, UnknownCertificateNamesTheTokenFileLine) {
  const ExplainedFailure e = ExplainFailure(
      absl::UnauthenticatedError("client certificate CN \"ci\" has no \"NAME ROLE cn:ci\" line in "
                                 "colltestd's --token-file"),
      kAddr);
  EXPECT_THAT(e.hint, HasSubstr("NAME ROLE cn:CN line"));
}

TEST(ExplainFailureTest, PermissionDeniedNamesTheRoleNeeded) {
  const absl::Status status =
      absl::PermissionDeniedError("Sweep needs role runner; grafana has role viewer");
  const ExplainedFailure e = ExplainFailure(status, kAddr);
  EXPECT_EQ(e.status, status);
  EXPECT_THAT(e.hint, StartsWith("this needs a token of role runner or above"));
  EXPECT_THAT(e.hint, HasSubstr("--token-file FILE"));
  EXPECT_THAT(ExplainFailure(absl::PermissionDeniedError("Health needs role admin; x has role "
                                                         "runner"),
                             kAddr)
                  .hint,
              StartsWith("this needs a token of role admin or above"));
}

TEST(ExplainFailureTest, CancellingAnotherOwnersRunNamesTheOwnerOrAnAdmin) {
  const ExplainedFailure e = ExplainFailure(
      absl::PermissionDeniedError("run r-1 belongs to ci; bob (role runner) may cancel only its "
                                  "own runs"),
      kAddr);
  EXPECT_THAT(e.hint, StartsWith("only the run's owner or an admin may cancel it"));
}

TEST(ExplainFailureTest, DeadlineBeforeAnyConnectionIsLikeUnreachable) {
  const ExplainedFailure e =
      ExplainFailure(MarkNotConnected(absl::DeadlineExceededError("Deadline Exceeded")), kAddr);
  EXPECT_EQ(e.status.message(), "server 127.0.0.1:7777: Deadline Exceeded");
  EXPECT_TRUE(IsNotConnected(e.status));  // the mark survives the rewording
  EXPECT_THAT(e.hint, StartsWith("colltestd may not be running at 127.0.0.1:7777"));
}

// The server's own answers are the explanation: no address in front, no hint.
TEST(ExplainFailureTest, TheServersOwnAnswersAreLeftAlone) {
  for (const absl::Status& status :
       {absl::InvalidArgumentError("spec.world_size: 9 ranks requested, 4 devices available"),
        absl::NotFoundError("run r-404 not found"),
        absl::FailedPreconditionError("BUSY: devices 0,1 in use by pid 4242"),
        absl::UnavailableError("worker pool shutting down"),
        absl::DeadlineExceededError("Deadline Exceeded"), absl::DataLossError("cut short")}) {
    const ExplainedFailure e = ExplainFailure(status, kAddr);
    EXPECT_EQ(e.status, status);
    EXPECT_EQ(e.hint, "") << status;
  }
}

}  // namespace
}  // namespace colltest::client
