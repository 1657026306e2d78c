// Who is calling the HTTP port, as the gRPC service must see it: the request's bearer token, its
// peer address in gRPC's own notation, and under mutual TLS the verified certificate's CN. These
// travel as metadata of the in-process call; nothing else of the HTTP request is copied, so a
// client cannot send the forwarded keys itself (the service trusts them only in process).
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/client_context.h"

struct mg_connection;

namespace colltest::http {

inline constexpr char kAuthorizationKey[] = "authorization";
inline constexpr char kForwardedPeerKey[] = "x-colltest-forwarded-peer";
inline constexpr char kForwardedCnKey[] = "x-colltest-forwarded-cn";
// Proves to the service that the call comes from this gateway (GatewayOptions::forwarding_secret):
// the in-process channel has no peer of its own ("unknown"), so the service trusts the forwarded
// keys only next to this secret.
inline constexpr char kForwardedSecretKey[] = "x-colltest-forwarded-secret";

struct Caller {
  std::optional<std::string> authorization;  // the Authorization header as sent
  std::string peer;                          // "ipv4:127.0.0.1:41234", "ipv6:[::1]:41234"
  std::optional<std::string> client_cn;      // the verified client certificate's subject CN
};

// The caller of the request on `conn`.
Caller CallerOf(const mg_connection* conn);

// `address` (as inet_ntop writes it) and `port` as gRPC names a peer: "ipv4:A:P", or "ipv6:[A]:P";
// an IPv4 client seen on a dual-stack socket (::ffff:a.b.c.d) is ipv4, as gRPC shows it.
std::string GrpcPeer(absl::string_view address, int port);

// Adds the caller's metadata and `secret` (when not empty) to `context` (before the call starts).
// gRPC takes only printable ASCII in a text metadata value (and aborts on anything else), so a
// token or CN with other bytes is UNAUTHENTICATED here: neither could match an identity of the
// token file anyway.
absl::Status Forward(const Caller& caller, absl::string_view secret, grpc::ClientContext* context);

}  // namespace colltest::http
