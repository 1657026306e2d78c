#include "server/net/auth.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/security/auth_context.h"
#include "server/net/peer_names.h"
#include "server/net/run_id.h"

namespace colltest::server {
namespace {

// Compares in time that depends only on the lengths, so a client cannot find a token byte by
// byte from response times.
bool SameSecret(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

// The principal holding `token`. Every token is compared, so the time taken does not tell which
// line matched.
const Principal* FindByToken(const std::vector<Principal>& principals, absl::string_view token) {
  const Principal* found = nullptr;
  for (const Principal& p : principals) {
    if (!p.token.empty() && SameSecret(token, p.token)) found = &p;
  }
  return found;
}

const Principal* FindByCommonName(const std::vector<Principal>& principals, absl::string_view cn) {
  for (const Principal& p : principals) {
    if (!p.common_name.empty() && p.common_name == cn) return &p;
  }
  return nullptr;
}

Caller CallerOf(const Principal& p) { return Caller{p.name, p.role}; }

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kViewer:
      return "viewer";
    case Role::kRunner:
      return "runner";
    case Role::kAdmin:
      return "admin";
  }
  return "unknown";
}

std::optional<Role> ParseRole(absl::string_view name) {
  for (Role role : {Role::kViewer, Role::kRunner, Role::kAdmin}) {
    if (name == RoleName(role)) return role;
  }
  return std::nullopt;
}

const std::string& GatewaySecret() {
  static const std::string* const secret = new std::string(NewSecret());
  return *secret;
}

namespace {

std::optional<std::string> Metadata(const grpc::ServerContext& context, absl::string_view key) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(grpc::string_ref(key.data(), key.size()));
  if (it == metadata.end()) return std::nullopt;
  return std::string(it->second.data(), it->second.size());
}

}  // namespace

bool FromGateway(const grpc::ServerContext& context) {
  const std::optional<std::string> secret = Metadata(context, kForwardedSecretKey);
  return secret.has_value() && SameSecret(*secret, GatewaySecret());
}

absl::StatusOr<Caller> Authorizer::Identify(const grpc::ServerContext& context) const {
  const std::optional<std::string> authorization = Metadata(context, "authorization");
  std::optional<absl::string_view> bearer;
  if (authorization.has_value()) bearer = *authorization;
  std::vector<std::string> common_names;
  std::string peer;
  if (FromGateway(context)) {
    // The HTTP gateway (http/gateway.h) forwards who its caller is; only it knows the secret.
    peer = Metadata(context, kForwardedPeerKey).value_or("http:unknown");
    if (auto cn = Metadata(context, kForwardedCnKey); cn.has_value() && config_.mutual_tls) {
      common_names.push_back(*cn);
    }
  } else {
    // Only a certificate the TLS layer verified against --tls-client-ca names anyone.
    if (config_.mutual_tls && context.auth_context() != nullptr) {
      for (const grpc::string_ref& cn :
           context.auth_context()->FindPropertyValues("x509_common_name")) {
        common_names.emplace_back(cn.data(), cn.size());
      }
    }
    // A connection colltestd's listener handed over is "fd:N" to gRPC: name its real peer instead.
    peer = PeerAddress(context.peer());
  }
  absl::StatusOr<Caller> caller = Identify(bearer, common_names, peer);
  // The listener keeps a connection that has made an authenticated call and may close the others
  // (server/net/listener.h); a gateway call's peer is no handed connection and is left as it is.
  if (caller.ok()) MarkCallAuthenticated(context.peer());
  return caller;
}

absl::StatusOr<Caller> Authorizer::Identify(std::optional<absl::string_view> authorization,
                                            const std::vector<std::string>& verified_common_names,
                                            absl::string_view peer) const {
  if (!enabled()) return Caller{absl::StrCat("peer:", peer), Role::kAdmin};
  if (authorization.has_value()) {
    constexpr absl::string_view kScheme = "Bearer ";
    const Principal* p = nullptr;
    if (absl::StartsWithIgnoreCase(*authorization, kScheme)) {
      p = FindByToken(config_.principals, authorization->substr(kScheme.size()));
    }
    if (p == nullptr) return absl::UnauthenticatedError("invalid bearer token");
    return CallerOf(*p);
  }
  for (const std::string& cn : verified_common_names) {
    // Mutual TLS without a token file: the CA is the whole policy, as before roles existed.
    if (config_.principals.empty()) return Caller{absl::StrCat("cn:", cn), Role::kAdmin};
    if (const Principal* p = FindByCommonName(config_.principals, cn)) return CallerOf(*p);
  }
  if (!verified_common_names.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "client certificate CN \"", verified_common_names.front(), "\" has no \"NAME ROLE cn:",
        verified_common_names.front(), "\" line in colltestd's --token-file"));
  }
  return absl::UnauthenticatedError(
      "missing \"authorization: Bearer <token>\" metadata (colltest --token-file)");
}

absl::StatusOr<Caller> Authorizer::Require(const grpc::ServerContext& context, Role needed,
                                           absl::string_view what) const {
  absl::StatusOr<Caller> caller = Identify(context);
  if (!caller.ok()) return caller.status();
  if (absl::Status allowed = CheckRole(*caller, needed, what); !allowed.ok()) return allowed;
  return caller;
}

bool Authorizer::CheckBasic(const std::string& user, const std::string& password) const {
  bool ok = false;
  for (const Principal& p : config_.principals) {
    if (!p.token.empty() && p.name == user && SameSecret(password, p.token)) ok = true;
  }
  return ok;
}

absl::Status CheckRole(const Caller& caller, Role needed, absl::string_view what) {
  if (caller.role >= needed) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(what, " needs role ", RoleName(needed), "; ",
                                                  caller.name, " has role ",
                                                  RoleName(caller.role)));
}

Role RoleToRun(const std::string& fault) { return fault.empty() ? Role::kRunner : Role::kAdmin; }

absl::Status CheckMayCancel(const Caller& caller, const std::string& run_id,
                            const std::string& owner) {
  if (caller.role >= Role::kAdmin || caller.name == owner) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("run ", run_id, " belongs to ", owner, "; ",
                                                  caller.name, " (role ", RoleName(caller.role),
                                                  ") may cancel only its own runs"));
}

}  // namespace colltest::server
