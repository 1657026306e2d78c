// Who is calling and what they may do. A caller is identified by a bearer token
// ("authorization: Bearer <token>") or, under mutual TLS, by the subject CN of its verified client
// certificate; the token file (token_file.h) gives each identity a name and a role. The checks run
// at the top of each handler rather than in an AuthMetadataProcessor because gRPC only runs
// processors on TLS credentials, and a token must also protect a plain-text listener.
//
// Without a token file and without mutual TLS, authentication is off: every caller is an admin
// named after its peer address ("peer:ipv4:127.0.0.1:41234"), which is only safe because the
// default listen address is loopback (server/options.h refuses anything else without
// --insecure-listen).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/server_context.h"

namespace colltest::server {

// Ordered: each role may do everything the roles below it may.
enum class Role {
  kViewer = 0,  // ListDevices, ListRuns, GetRun, gRPC health, reflection, metrics
  kRunner = 1,  // + Run, Sweep, Health, Cancel of its own runs
  kAdmin = 2,   // + Cancel of any run, fault injection (with --allow-fault-injection)
};

const char* RoleName(Role role);
std::optional<Role> ParseRole(absl::string_view name);

// One identity of the token file: a name, a role, and either a token or a certificate CN.
struct Principal {
  std::string name;
  Role role = Role::kViewer;
  std::string token;        // bearer token; empty for a certificate identity
  std::string common_name;  // subject CN of a verified client certificate; empty for a token
};

struct AuthConfig {
  std::vector<Principal> principals;  // from --token-file; empty without one
  bool mutual_tls = false;            // client certificates are required and verified
};

// The identity a request runs as.
struct Caller {
  std::string name;  // Principal::name, "cn:<CN>" or "peer:<address>"
  Role role = Role::kViewer;
};

class Authorizer {
 public:
  explicit Authorizer(AuthConfig config) : config_(std::move(config)) {}

  // Off without a token file and without mutual TLS: every caller is then an admin.
  bool enabled() const { return !config_.principals.empty() || config_.mutual_tls; }

  // The caller of `context`, or UNAUTHENTICATED for a missing or invalid token.
  absl::StatusOr<Caller> Identify(const grpc::ServerContext& context) const;
  // The same from the parts of a request: the "authorization" metadata (if any), the CNs of the
  // verified client certificate (empty without one) and the peer address.
  absl::StatusOr<Caller> Identify(std::optional<absl::string_view> authorization,
                                  const std::vector<std::string>& verified_common_names,
                                  absl::string_view peer) const;

  // Identify, then PERMISSION_DENIED unless the caller's role is at least `needed`; `what` names
  // the operation in the message ("Run", "Run with a fault").
  absl::StatusOr<Caller> Require(const grpc::ServerContext& context, Role needed,
                                 absl::string_view what) const;

  // HTTP Basic credentials of a metrics scrape: a token's name and the token, any role.
  bool CheckBasic(const std::string& user, const std::string& password) const;
  // Whether metrics scrapes must authenticate: when the token file exists.
  bool metrics_need_auth() const { return !config_.principals.empty(); }

 private:
  AuthConfig config_;
};

// PERMISSION_DENIED naming the role needed and the caller's role, or OK.
// The metadata the HTTP gateway sets on its calls (http/forwarding.h): its caller's address in
// gRPC's form, with client certificates the verified CN, and the process's gateway secret. The
// in-process channel it calls over has no peer of its own ("unknown" in gRPC 1.51), so the
// forwarded values are trusted only next to the secret, which never leaves the process.
inline constexpr absl::string_view kForwardedPeerKey = "x-colltest-forwarded-peer";
inline constexpr absl::string_view kForwardedCnKey = "x-colltest-forwarded-cn";
inline constexpr absl::string_view kForwardedSecretKey = "x-colltest-forwarded-secret";
// Random, made at the first call; the gateway sends it (GatewayOptions::forwarding_secret).
const std::string& GatewaySecret();
// Whether the call carries the gateway secret.
bool FromGateway(const grpc::ServerContext& context);

absl::Status CheckRole(const Caller& caller, Role needed, absl::string_view what);
// The role a run needs: runner, or admin when it injects a fault.
Role RoleToRun(const std::string& fault);
// A runner may cancel only its own runs, an admin any: PERMISSION_DENIED "run ID belongs to NAME".
absl::Status CheckMayCancel(const Caller& caller, const std::string& run_id,
                            const std::string& owner);

}  // namespace colltest::server
