#include "server/net/grpc_server.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "grpc/grpc.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/server_posix.h"
#include "server/net/fd_limit.h"
#include "server/net/listen_address.h"
#include "server/net/reflection_v1.h"
#include "spdlog/spdlog.h"

namespace colltest::server {
namespace {

// Keepalive: every connection, with calls or without, is pinged after 30 s of silence and closed
// when the ping is not answered within 10 s, so a vanished client (host down, cable pulled) frees
// its slot in under a minute instead of at TCP's retransmission timeout (~15 min).
constexpr int kKeepaliveTimeMs = 30'000;
constexpr int kKeepaliveTimeoutMs = 10'000;
// Ping policing: a client's PING that comes sooner than this after its previous one, while the
// server sends it nothing, is a strike, and the third strike gets GOAWAY (ENHANCE_YOUR_CALM), so
// a PING flood cannot keep a connection busy. gRPC's default interval is 5 min; 10 s still lets
// clients keep their connection alive at the usual 10 s or more (colltest's own clients send no
// keepalive pings).
constexpr int kMinRecvPingIntervalMs = 10'000;
constexpr int kMaxPingStrikes = 2;
// A connection younger than this is never evicted to make room at the cap or at the per-peer
// limit: a client that connects and calls at once gets its call in (a CLI call on loopback takes
// a few ms from connect to authentication).
constexpr absl::Duration kEvictionGrace = absl::Seconds(1);
// The default --max-connections-per-peer: a quarter of the cap, so that one address cannot hold
// it, but at least 16 (and at most the cap) so that a burst of clients on one host is served.
constexpr uint32_t kMinDefaultPerPeer = 16;

int Milliseconds(absl::Duration d) {
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(d), INT32_MAX));
}

void ConfigureBuilder(const FrontEndLimits& limits, grpc::ServerBuilder& builder) {
  builder.SetMaxReceiveMessageSize(kMaxGrpcMessageBytes);
  builder.SetMaxSendMessageSize(kMaxGrpcMessageBytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Without this the server stops pinging an idle connection after two pings.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             kMinRecvPingIntervalMs);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, kMaxPingStrikes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             Milliseconds(limits.max_connection_idle));
  // Bounds gRPC's own (TLS) handshake; plaintext connections are bounded by the Listener.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             Milliseconds(limits.handshake_timeout));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(limits.max_streams_per_connection));
  grpc::ResourceQuota quota("colltestd");
  quota.Resize(limits.memory_bytes);
  quota.SetMaxThreads(static_cast<int>(limits.max_threads));
  builder.SetResourceQuota(quota);
  // Next to v1alpha, which linking grpc++_reflection adds to every server: clients that ask v1
  // first (grpcurl >= 1.8.8, Postman) would otherwise be answered UNIMPLEMENTED.
  AddReflectionV1(builder);
}

}  // namespace

FrontEndLimits ResolveFrontEndLimits(const FrontEndFlags& flags, uint64_t fd_soft_limit,
                                     size_t devices) {
  FrontEndLimits limits;
  limits.max_connections = flags.max_connections != 0
                               ? flags.max_connections
                               : DefaultMaxConnections(fd_soft_limit, devices);
  if (flags.max_connections != 0 &&
      flags.max_connections > DefaultMaxConnections(fd_soft_limit, devices) * 2) {
    spdlog::warn("--max-connections {} leaves less than {} of the {} descriptors to the workers",
                 flags.max_connections, FdReserve(devices), fd_soft_limit);
  }
  limits.handshake_timeout = flags.handshake_timeout;
  limits.first_call_timeout = flags.first_call_timeout;
  limits.max_connections_per_peer =
      flags.max_connections_per_peer != 0
          ? flags.max_connections_per_peer
          : std::min(limits.max_connections,
                     std::max(kMinDefaultPerPeer, limits.max_connections / 4));
  limits.max_connection_idle = flags.max_connection_idle;
  limits.max_streams_per_connection = flags.max_streams_per_connection;
  limits.max_threads = flags.max_threads;
  limits.memory_bytes = flags.grpc_memory;
  return limits;
}

absl::StatusOr<std::unique_ptr<GrpcFrontEnd>> GrpcFrontEnd::Prepare(
    const std::string& listen, std::shared_ptr<grpc::ServerCredentials> credentials, bool tls,
    const FrontEndLimits& limits, grpc::ServerBuilder& builder) {
  ConfigureBuilder(limits, builder);
  std::unique_ptr<GrpcFrontEnd> front(new GrpcFrontEnd());
  front->listen_ = listen;
  if (tls) {
    builder.AddListeningPort(listen, std::move(credentials), &front->tls_port_);
    return front;
  }
  ListenerOptions listener_options;
  listener_options.max_connections = limits.max_connections;
  listener_options.handshake_timeout = limits.handshake_timeout;
  listener_options.first_call_timeout = limits.first_call_timeout;
  listener_options.max_unproven_per_peer = limits.max_connections_per_peer;
  listener_options.eviction_grace = kEvictionGrace;
  listener_options.events = limits.listener_events;
  absl::StatusOr<std::unique_ptr<Listener>> listener = Listener::Bind(listen, listener_options);
  if (!listener.ok()) return listener.status();
  front->listener_ = *std::move(listener);
  return front;
}

absl::Status GrpcFrontEnd::Start(grpc::Server* server) {
  if (listener_ == nullptr) {
    const bool unix_socket = absl::StartsWith(listen_, "unix:");
    if (!unix_socket && tls_port_ == 0) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", listen_));
    }
    address_ = unix_socket ? listen_ : absl::StrCat(ListenHost(listen_), ":", tls_port_);
    return absl::OkStatus();
  }
  address_ = listener_->address();
  listener_->Start([server](int fd) { grpc::AddInsecureChannelFromFd(server, fd); });
  return absl::OkStatus();
}

void GrpcFrontEnd::Stop() {
  if (listener_ != nullptr) listener_->Stop();
}

}  // namespace colltest::server
