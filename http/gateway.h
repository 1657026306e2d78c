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

#include "absl/status/status.h"
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
  int threads = 16;               // connections served at once
  int request_timeout_ms = 5000;  // to read a request; a sweep's response streams without limit
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
