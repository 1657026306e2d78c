// colltestd's HTTP port (--http): the JSON API under /api/v1, the dashboard at /, and Prometheus
// metrics at /metrics, on CivetWeb. The API holds no validation or execution of its own: each
// request is turned into the gRPC request message (proto3 JSON mapping) and sent to the same
// CollectiveTest service over an in-process channel, with the caller's bearer token and peer,
// so roles, limits, quotas and error messages are gRPC's (docs/http-api.md).
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "http/gateway_options.h"

namespace colltest::http {

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
