// Transport security of the public listener: plain text (the default bind is loopback), TLS with
// --tls-cert/--tls-key, or mutual TLS when --tls-client-ca is given too.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"
#include "server/net/listen_options.h"

namespace colltest::server {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsOptions& tls);

}  // namespace colltest::server
