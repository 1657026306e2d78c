#include "http/forwarding.h"

#include <arpa/inet.h>
#include <civetweb.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "http/tls.h"

namespace colltest::http {
namespace {

bool IsPrintableAscii(absl::string_view text) {
  for (const char c : text) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace

Caller CallerOf(const mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  Caller caller;
  // mg_get_header takes a non-const connection but only reads it.
  if (const char* authorization =
          mg_get_header(const_cast<mg_connection*>(conn), "Authorization")) {
    caller.authorization = authorization;
  }
  caller.peer = GrpcPeer(info->remote_addr, info->remote_port);
  // CivetWeb fills client_cert only after a handshake that verified the certificate (the port
  // requires one when a client CA is configured); peer_cert is its X509.
  if (info->client_cert != nullptr) {
    caller.client_cn = SubjectCommonName(info->client_cert->peer_cert);
  }
  return caller;
}

std::string GrpcPeer(absl::string_view address, int port) {
  const std::string text(address);
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_V4MAPPED(&v6)) {
      char v4[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &v6.s6_addr[12], v4, sizeof(v4));
      return absl::StrCat("ipv4:", v4, ":", port);
    }
    return absl::StrCat("ipv6:[", text, "]:", port);
  }
  // An address with a zone ("fe80::1%eth0") does not parse above but is still IPv6.
  if (absl::StrContains(text, ':')) return absl::StrCat("ipv6:[", text, "]:", port);
  return absl::StrCat("ipv4:", text, ":", port);
}

absl::Status Forward(const Caller& caller, absl::string_view secret, grpc::ClientContext* context) {
  if (!secret.empty()) context->AddMetadata(kForwardedSecretKey, std::string(secret));
  if (caller.authorization) {
    if (!IsPrintableAscii(*caller.authorization)) {
      return absl::UnauthenticatedError("Authorization header: not printable ASCII");
    }
    context->AddMetadata(kAuthorizationKey, *caller.authorization);
  }
  if (caller.client_cn) {
    if (!IsPrintableAscii(*caller.client_cn)) {
      return absl::UnauthenticatedError("client certificate CN: not printable ASCII");
    }
    context->AddMetadata(kForwardedCnKey, *caller.client_cn);
  }
  context->AddMetadata(kForwardedPeerKey, caller.peer);
  return absl::OkStatus();
}

}  // namespace colltest::http
