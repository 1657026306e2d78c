// The public listener's flags as the operator gave them: its TLS files and its connection limits.
// A room of their own below the daemon's command line (server/options.h holds them as members),
// so that the transport reads its settings without knowing every other flag.
#pragma once

#include <cstdint>
#include <string>

#include "absl/time/time.h"

namespace colltest::server {

// --tls-cert, --tls-key, --tls-client-ca: PEM files; an empty cert means plaintext.
struct TlsOptions {
  std::string cert;
  std::string key;
  std::string client_ca;  // set: clients must present a certificate signed by it
};

// Connections and streams (docs/limits.md); ResolveFrontEndLimits (grpc_server.h) fills in the
// defaults that depend on the descriptor budget.
struct FrontEndFlags {
  uint32_t max_connections = 0;  // 0: DefaultMaxConnections(the soft fd limit, the devices)
  absl::Duration handshake_timeout = absl::Seconds(5);  // TCP accept to HTTP/2 client preface
  // TCP accept to the first call that passes authentication (server/net/listener.h).
  absl::Duration first_call_timeout = absl::Seconds(10);
  // Connections without such a call per client IP address; 0: max(16, max_connections / 4).
  uint32_t max_connections_per_peer = 0;
  uint32_t max_streams_per_connection = 64;
  absl::Duration max_connection_idle = absl::Minutes(5);  // no call open: GOAWAY
  uint32_t max_threads = 512;         // gRPC's resource quota: threads for calls
  uint64_t grpc_memory = 1ull << 30;  // gRPC's resource quota: buffer memory
};

}  // namespace colltest::server
