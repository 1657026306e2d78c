// colltestd's HTTP port (--http): the JSON API under /api/v1, the dashboard at /, and Prometheus
// metrics at /metrics, on CivetWeb. The API holds no validation or execution of its own: each
// request is turned into the gRPC request message (proto3 JSON mapping) and sent to the same
// CollectiveTest service over an in-process channel, with the caller's bearer token and peer,
// so roles, limits, quotas and error messages are gRPC's (docs/http-api.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dashboard/assets.h"
#include "grpcpp/channel.h"

namespace colltest::http {

inline constexpr uint64_t kMaxBodyBytes = 1 << 20;  // a larger request body is 413

struct GatewayOptions {
  std::string address;  // "HOST:PORT"; port 0 picks a free one
  // TLS for the port (same files as gRPC's --tls-cert/--tls-key/--tls-client-ca); empty: plain.
  std::string tls_cert, tls_key, tls_client_ca;
  // The CollectiveTest service, in process (grpc::Server::InProcessChannel).
  std::shared_ptr<grpc::Channel> channel;
  // Text of GET /metrics (Metrics::Render); null: /metrics is 404.
  std::function<std::string()> render_metrics;
  // HTTP Basic check for /metrics (user, password) -> ok; null: no check.
  std::function<bool(const std::string&, const std::string&)> metrics_basic_auth;
  // The dashboard's file at a path (dashboard::FindAsset); null: every dashboard path is 404. A
  // function rather than a link to colltest_dashboard, so that this library needs no web files.
  std::function<const dashboard::Asset*(std::string_view)> find_asset;
  // Sent with every call (x-colltest-forwarded-secret) so that the service can tell the gateway's
  // calls, whose forwarded caller it trusts, from any other; empty: none sent.
  std::string forwarding_secret;
  int threads = 16;  // connections served at once
  // To read a request, and for each write of a reply (a client that stops reading a sweep for
  // that long is gone); a sweep's response as a whole streams without limit.
  int request_timeout_ms = 5000;
  // Deadline of each unary API call but Health (which may take minutes) and the sweep stream.
  int api_deadline_ms = 30000;
};

class Gateway {
 public:
  // Binds and serves. Errors name the address (in use, bad certificate, ...).
  static absl::StatusOr<std::unique_ptr<Gateway>> Start(GatewayOptions options);
  ~Gateway();  // stops serving; streaming sweeps are cancelled
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // "HOST:PORT" actually bound (the real port when 0 was asked).
  std::string bound_address() const;

 private:
  struct Impl;
  explicit Gateway(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace colltest::http
