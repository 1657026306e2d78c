#include "server/net/auth.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

using ::testing::HasSubstr;

AuthConfig Config(bool mutual_tls = false) {
  AuthConfig config;
  config.principals = {{"dash", Role::kViewer, "viewer-token-000001", ""},
                       {"ci", Role::kRunner, "runner-token-000001", ""},
                       {"root", Role::kAdmin, "admin-token-0000001", ""},
                       {"oncall", Role::kRunner, "", "oncall.example.com"}};
  config.mutual_tls = mutual_tls;
  return config;
}

TEST(AuthTest, TokensNameTheCallerAndGiveItsRole) {
  const Authorizer auth(Config());
  absl::StatusOr<Caller> caller = auth.Identify("Bearer runner-token-000001", {}, "ipv4:1.2.3.4:5");
  ASSERT_TRUE(caller.ok()) << caller.status();
  EXPECT_EQ(caller->name, "ci");
  EXPECT_EQ(caller->role, Role::kRunner);
  EXPECT_EQ(auth.Identify("bearer admin-token-0000001", {}, "p")->name, "root");
}

TEST(AuthTest, MissingOrWrongTokensAreUnauthenticated) {
  const Authorizer auth(Config());
  EXPECT_EQ(auth.Identify(std::nullopt, {}, "p").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Identify("Bearer runner-token-000002", {}, "p").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Identify("runner-token-000001", {}, "p").status().code(),
            absl::StatusCode::kUnauthenticated);
  // A certificate line has no token: an empty bearer must not match it.
  EXPECT_EQ(auth.Identify("Bearer ", {}, "p").status().code(), absl::StatusCode::kUnauthenticated);
}

TEST(AuthTest, VerifiedCertificatesMapThroughTheirCommonName) {
  const Authorizer auth(Config(/*mutual_tls=*/true));
  absl::StatusOr<Caller> caller = auth.Identify(std::nullopt, {"oncall.example.com"}, "p");
  ASSERT_TRUE(caller.ok()) << caller.status();
  EXPECT_EQ(caller->name, "oncall");
  EXPECT_EQ(caller->role, Role::kRunner);
  absl::StatusOr<Caller> stranger = auth.Identify(std::nullopt, {"evil.example.com"}, "p");
  EXPECT_EQ(stranger.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(stranger.status().message()), HasSubstr("evil.example.com"));

  // Mutual TLS without a token file: the CA is the policy, every verified client an admin.
  const Authorizer ca_only(AuthConfig{{}, true});
  EXPECT_TRUE(ca_only.enabled());
  EXPECT_EQ(ca_only.Identify(std::nullopt, {"x"}, "p")->name, "cn:x");
  EXPECT_EQ(ca_only.Identify(std::nullopt, {}, "p").status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST(AuthTest, WithoutTokensOrMutualTlsEveryPeerIsAnAdmin) {
  const Authorizer auth(AuthConfig{});
  EXPECT_FALSE(auth.enabled());
  absl::StatusOr<Caller> caller = auth.Identify(std::nullopt, {}, "ipv4:127.0.0.1:4242");
  ASSERT_TRUE(caller.ok());
  EXPECT_EQ(caller->name, "peer:ipv4:127.0.0.1:4242");
  EXPECT_EQ(caller->role, Role::kAdmin);
}

TEST(AuthTest, RolesAreOrdered) {
  const Caller viewer{"dash", Role::kViewer};
  const Caller runner{"ci", Role::kRunner};
  EXPECT_TRUE(CheckRole(viewer, Role::kViewer, "ListRuns").ok());
  const absl::Status denied = CheckRole(viewer, Role::kRunner, "Run");
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(denied.message(), "Run needs role runner; dash has role viewer");
  EXPECT_TRUE(CheckRole(runner, RoleToRun(""), "Run").ok());
  EXPECT_EQ(CheckRole(runner, RoleToRun("skip_rearm"), "Run with a fault").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(CheckRole(Caller{"root", Role::kAdmin}, RoleToRun("skip_rearm"), "Run").ok());
}

TEST(AuthTest, RunnersCancelOnlyTheirOwnRuns) {
  const Caller runner{"ci", Role::kRunner};
  EXPECT_TRUE(CheckMayCancel(runner, "r-1", "ci").ok());
  const absl::Status denied = CheckMayCancel(runner, "r-1", "nightly");
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(denied.message()), HasSubstr("run r-1 belongs to nightly"));
  EXPECT_TRUE(CheckMayCancel(Caller{"root", Role::kAdmin}, "r-1", "nightly").ok());
}

TEST(AuthTest, MetricsBasicAuthIsATokenNameAndItsToken) {
  const Authorizer auth(Config());
  EXPECT_TRUE(auth.metrics_need_auth());
  EXPECT_TRUE(auth.CheckBasic("dash", "viewer-token-000001"));
  EXPECT_FALSE(auth.CheckBasic("dash", "runner-token-000001"));
  EXPECT_FALSE(auth.CheckBasic("ci", "viewer-token-000001"));
  EXPECT_FALSE(auth.CheckBasic("oncall", ""));  // certificate identities have no password
  EXPECT_FALSE(Authorizer(AuthConfig{}).metrics_need_auth());
}

}  // namespace
}  // namespace colltest::server
