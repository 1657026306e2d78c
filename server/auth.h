// Bearer-token authentication of the public API: with a token configured, every CollectiveTest
// call must carry "authorization: Bearer <token>". The check runs at the top of each handler
// rather than in an AuthMetadataProcessor because gRPC only runs processors on TLS credentials,
// and a token must also protect a plain-text listener. Health checks and reflection stay open so
// that probes and grpcurl work without the secret.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/server_context.h"

namespace colltest::server {

class TokenAuth {
 public:
  // An empty token lets every call through.
  explicit TokenAuth(std::string token) : token_(std::move(token)) {}

  bool enabled() const { return !token_.empty(); }
  absl::Status Check(const grpc::ServerContext& context) const;

 private:
  std::string token_;
};

// Reads a token file: the first line, without surrounding whitespace. An empty token is an error,
// since it would silently turn authentication off.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace colltest::server
