#include "client/commands/hints.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace colltest::client {
namespace {

// The payload that MarkNotConnected sets: a status's payloads are kept wherever it is passed on,
// where a word added to its message could be reworded away.
constexpr absl::string_view kNotConnectedPayload = "colltest.client/not-connected";

// The causes that have a fix of their own. The texts matched are gRPC's (core's connectivity and
// TLS messages) and colltestd's (auth.cc); a cause not recognised gets no hint rather than a
// wrong one.
enum class Cause {
  kNone,
  kNotRunning,    // refused, no route: nothing listens at the address
  kNoSuchHost,    // the name does not resolve
  kSilent,        // accepted, but no HTTP/2 settings came: not a gRPC server, or a stuck one
  kHttp,          // an HTTP/1 server: colltestd's --http port, or another web server
  kClosedAtOnce,  // closed or reset at once: the server's connection cap, or TLS on one side only
  kTlsUntrusted,  // the server's certificate is not signed by --tls-ca
  kTlsName,       // the certificate does not name the address
  kNotTls,        // the client spoke TLS to a plaintext port
  kTlsHandshake,  // another TLS failure
  kNotColltestd,  // a gRPC server without the colltest service: --health-listen, or another
  kNoToken,       // colltestd wants a token and none was sent
  kBadToken,      // the token is not one of colltestd's
  kUnknownCert,   // a verified client certificate without a line in colltestd's --token-file
  kRole,          // the caller's role is below the one the call needs
  kNotOwner,      // a runner cancelling another caller's run
  kNotConnected,  // DEADLINE_EXCEEDED before a connection was made
};

bool Contains(absl::string_view text, absl::string_view part) {
  return absl::StrContains(text, part);
}

Cause UnavailableCause(absl::string_view m) {
  if (Contains(m, "DNS resolution failed") || Contains(m, "Domain name not found")) {
    return Cause::kNoSuchHost;
  }
  if (Contains(m, "Failed parsing HTTP/2")) return Cause::kHttp;
  if (Contains(m, "before receiving SETTINGS frame")) return Cause::kSilent;
  if (Contains(m, "certificate verify failed")) return Cause::kTlsUntrusted;
  if (Contains(m, "Peer name") && Contains(m, "not in peer certificate")) return Cause::kTlsName;
  if (Contains(m, "wrong version number")) return Cause::kNotTls;
  if (Contains(m, "Ssl handshake failed") || Contains(m, "Handshake failed")) {
    return Cause::kTlsHandshake;
  }
  if (Contains(m, "Socket closed") || Contains(m, "Connection reset by peer")) {
    return Cause::kClosedAtOnce;
  }
  // Refused, no route, or any other failure to connect.
  if (Contains(m, "failed to connect to all addresses") || Contains(m, "Connection refused") ||
      Contains(m, "Network is unreachable") || Contains(m, "No route to host")) {
    return Cause::kNotRunning;
  }
  // An UNAVAILABLE colltestd sent itself (a worker pool shutting down) is its own explanation.
  return Cause::kNone;
}

Cause CauseOf(const absl::Status& status) {
  const absl::string_view m = status.message();
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
      return UnavailableCause(m);
    case absl::StatusCode::kUnimplemented:
      // An HTTP/2 server that is not gRPC answers a status that gRPC maps to UNIMPLEMENTED.
      return Contains(m, "http2 header with status") ? Cause::kHttp : Cause::kNotColltestd;
    case absl::StatusCode::kUnauthenticated:
      if (Contains(m, "missing \"authorization")) return Cause::kNoToken;
      if (Contains(m, "client certificate CN")) return Cause::kUnknownCert;
      return Cause::kBadToken;
    case absl::StatusCode::kPermissionDenied:
      return Contains(m, "may cancel only its own runs") ? Cause::kNotOwner : Cause::kRole;
    case absl::StatusCode::kDeadlineExceeded:
      return IsNotConnected(status) ? Cause::kNotConnected : Cause::kNone;
    default:
      return Cause::kNone;
  }
}

// Failures of the connection itself, whose message gets the address in front.
bool IsConnectionCause(Cause cause) {
  switch (cause) {
    case Cause::kNotRunning:
    case Cause::kNoSuchHost:
    case Cause::kSilent:
    case Cause::kHttp:
    case Cause::kClosedAtOnce:
    case Cause::kTlsUntrusted:
    case Cause::kTlsName:
    case Cause::kNotTls:
    case Cause::kTlsHandshake:
    case Cause::kNotColltestd:
    case Cause::kNotConnected:
      return true;
    default:
      return false;
  }
}

// "runner" from colltestd's "Run needs role runner; ci has role viewer".
std::string NeededRole(absl::string_view message) {
  constexpr absl::string_view kNeeds = "needs role ";
  const size_t at = message.find(kNeeds);
  if (at == absl::string_view::npos) return "";
  absl::string_view role = message.substr(at + kNeeds.size());
  return std::string(role.substr(0, role.find_first_of("; ")));
}

constexpr absl::string_view kElsewhere =
    "point the client elsewhere with --server HOST:PORT or the COLLTEST_SERVER environment "
    "variable";
constexpr absl::string_view kAtListen =
    "point the client at colltestd's --listen address with --server HOST:PORT or the "
    "COLLTEST_SERVER environment variable";

std::string ConnectionHint(Cause cause, absl::string_view addr) {
  switch (cause) {
    case Cause::kNotRunning:
    case Cause::kNotConnected:
      return absl::StrCat("colltestd may not be running at ", addr,
                          ": start it (colltestd --listen ", addr, ") or ", kElsewhere);
    case Cause::kNoSuchHost:
      return absl::StrCat("the host name in ", addr, " does not resolve: ", kElsewhere);
    case Cause::kSilent:
      return absl::StrCat(addr, " accepted the connection but never answered as a gRPC server: ",
                          "it is not colltestd, or the server there is stuck: ", kAtListen);
    case Cause::kHttp:
      return absl::StrCat(
          "the server at ", addr, " speaks HTTP, not gRPC: it is not colltestd ",
          "(maybe its --http port, which serves the dashboard and /api/v1): ", kAtListen);
    case Cause::kNotColltestd:
      return absl::StrCat("the server at ", addr, " does not serve colltest.v1.CollectiveTest: ",
                          "it is not colltestd (maybe its --health-listen port, which serves only "
                          "grpc.health.v1) or a colltestd older than this client: ",
                          kAtListen);
    default:
      return "";
  }
}

std::string TlsHint(Cause cause, absl::string_view addr) {
  switch (cause) {
    case Cause::kClosedAtOnce:
      // colltestd closes a connection at once when it is at --max-connections or at
      // --max-connections-per-peer for the client's address, which is the likelier cause on a
      // server that has worked before; a TLS mismatch fails on the first try.
      return absl::StrCat(addr, " closed the connection right after it was made: most likely ",
                          "colltestd was at its connection cap (--max-connections, or "
                          "--max-connections-per-peer for this address; try again shortly, and "
                          "see colltest_connections_refused_total on its metrics); or TLS is on "
                          "one side only: a colltestd started with --tls-cert needs --tls-ca FILE "
                          "(the CA that signed its certificate), and with --tls-client-ca also "
                          "--tls-cert and --tls-key; one without TLS needs none of them");
    case Cause::kTlsUntrusted:
      return absl::StrCat("the certificate of ", addr, " is not signed by the CA in --tls-ca: ",
                          "pass the CA that signed colltestd's --tls-cert");
    case Cause::kTlsName:
      return absl::StrCat("the certificate of ", addr, " does not hold the name the client ",
                          "expects: pass --tls-server-name NAME with a name it holds, or connect "
                          "to that name with --server NAME:PORT");
    case Cause::kNotTls:
      return absl::StrCat(addr, " does not speak TLS: leave out --tls-ca, --tls-cert and ",
                          "--tls-key for a colltestd without --tls-cert, or check the port: "
                          "colltestd's --http and --health-listen ports do not serve its API");
    case Cause::kTlsHandshake:
      return absl::StrCat("the TLS handshake with ", addr, " failed: check --tls-ca, --tls-cert, ",
                          "--tls-key and --tls-server-name against colltestd's TLS flags");
    default:
      return "";
  }
}

std::string AuthHint(Cause cause, absl::string_view addr, absl::string_view message) {
  switch (cause) {
    case Cause::kNoToken:
      return absl::StrCat("colltestd at ", addr, " requires a token: pass --token-file FILE, ",
                          "FILE holding a token of colltestd's --token-file");
    case Cause::kBadToken:
      return absl::StrCat("colltestd at ", addr, " does not know the token of --token-file: ",
                          "use one listed in colltestd's --token-file (NAME ROLE TOKEN lines)");
    case Cause::kUnknownCert:
      return absl::StrCat("colltestd at ", addr, " knows the client certificate's CA but not its ",
                          "CN: add a NAME ROLE cn:CN line to colltestd's --token-file, or pass "
                          "--token-file with a token");
    case Cause::kRole: {
      const std::string role = NeededRole(message);
      return absl::StrCat("this needs a token of role ", role.empty() ? "runner or admin" : role,
                          " or above (viewer < runner < admin) in colltestd's --token-file at ",
                          addr, ": pass one with --token-file FILE");
    }
    case Cause::kNotOwner:
      return "only the run's owner or an admin may cancel it: pass the owner's or an admin's "
             "token with --token-file FILE";
    default:
      return "";
  }
}

}  // namespace

ExplainedFailure ExplainFailure(const absl::Status& status, absl::string_view server) {
  const Cause cause = CauseOf(status);
  if (cause == Cause::kNone) return {status, ""};
  const std::string addr = server.empty() ? std::string("the server") : std::string(server);
  std::string hint = ConnectionHint(cause, addr);
  if (hint.empty()) hint = TlsHint(cause, addr);
  if (hint.empty()) hint = AuthHint(cause, addr, status.message());
  if (!IsConnectionCause(cause)) return {status, std::move(hint)};
  // gRPC's text names the resolved address at best ("ipv4:127.0.0.1:1"), and a C++ server
  // without the service answers with no text at all.
  const absl::string_view what =
      status.message().empty() ? absl::string_view("no such service or method") : status.message();
  absl::Status explained(status.code(), absl::StrCat("server ", addr, ": ", what));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    explained.SetPayload(url, payload);
  });
  return {std::move(explained), std::move(hint)};
}

absl::Status MarkNotConnected(absl::Status status) {
  status.SetPayload(kNotConnectedPayload, absl::Cord("1"));
  return status;
}

bool IsNotConnected(const absl::Status& status) {
  return status.GetPayload(kNotConnectedPayload).has_value();
}

}  // namespace colltest::client
