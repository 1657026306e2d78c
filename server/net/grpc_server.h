// colltestd's gRPC front end: the server's limits (channel arguments, resource quota) and where
// its connections come from. Plaintext addresses (TCP and unix:) are accepted by colltestd's own
// Listener and handed to the built server; TLS uses gRPC's own listener, because gRPC 1.51 hands a
// descriptor over only with insecure credentials (grpc_server_add_channel_from_fd refuses others).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "server/net/listen_options.h"
#include "server/net/listener.h"
#include "server/net/listener_events.h"

namespace colltest::server {

// The limits the front end applies, resolved from the flags and the descriptor budget.
struct FrontEndLimits {
  uint32_t max_connections = 0;
  absl::Duration handshake_timeout;
  absl::Duration first_call_timeout;
  uint32_t max_connections_per_peer = 0;  // unproven connections of one client IP address
  absl::Duration max_connection_idle;
  uint32_t max_streams_per_connection = 0;
  uint32_t max_threads = 0;
  uint64_t memory_bytes = 0;
  ListenerEvents* listener_events = nullptr;  // not owned; null: nobody counts connections
};

// --max-connections or its default for `fd_soft_limit` and `devices`, --max-connections-per-peer
// or its default for that cap, and the other flags as is.
FrontEndLimits ResolveFrontEndLimits(const FrontEndFlags& flags, uint64_t fd_soft_limit,
                                     size_t devices);

class GrpcFrontEnd {
 public:
  // Configures `builder` (message sizes, channel arguments, resource quota, reflection v1) and
  // binds: the own listener for plaintext credentials (the builder gets no port), gRPC's port with
  // TLS ones.
  static absl::StatusOr<std::unique_ptr<GrpcFrontEnd>> Prepare(
      const std::string& listen, std::shared_ptr<grpc::ServerCredentials> credentials, bool tls,
      const FrontEndLimits& limits, grpc::ServerBuilder& builder);

  // Call with the server built from the builder: starts handing connections to it.
  absl::Status Start(grpc::Server* server);
  // Where clients connect ("HOST:PORT" with the bound port, or "unix:PATH"); valid after Start.
  const std::string& address() const { return address_; }
  // Stops accepting; call before grpc::Server::Shutdown.
  void Stop();

 private:
  GrpcFrontEnd() = default;

  std::unique_ptr<Listener> listener_;  // null with TLS
  std::string listen_;
  int tls_port_ = 0;  // filled in by BuildAndStart
  std::string address_;
};

}  // namespace colltest::server
