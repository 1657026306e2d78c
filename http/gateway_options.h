// What colltestd's HTTP port is configured with (gateway.h starts it). A header of its own so
// that the request handlers (handler_context.h, pages.h, request_body.cc) read the options without
// the gateway that owns them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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
  // Connections served at once: CivetWeb gives each its own thread from the first byte to the
  // last, and a connection beyond them waits unanswered in the listen queue.
  int threads = 64;
  // To read a request's headers, to wait for each next byte of its body, and for each write of a
  // reply (a client that stops reading a sweep for that long is gone); a sweep's response as a
  // whole streams without limit.
  int request_timeout_ms = 5000;
  // The whole body must arrive within this after the headers (which have request_timeout_ms), so
  // a request arrives within both together; else 408 and the connection is closed.
  int body_timeout_ms = 10000;
  // Requests reading a body at once, in all (503 beyond) and from one peer address (429 beyond),
  // refused at once and their connections closed. Below `threads`: the threads above it are a
  // reserve for /healthz, /metrics and GETs that slow bodies cannot take (request_admission.h).
  int max_body_readers = 16;
  int max_body_readers_per_peer = 4;
  // Authentication is off (every caller an admin): the Host header must then name this port
  // (origin_check.h, against DNS rebinding).
  bool check_host = false;
  // More names for the Host and Origin headers: "name" (any port) or "name:port".
  std::vector<std::string> allowed_hosts;
  // Deadline of each unary API call but Health (which may take minutes) and the sweep stream.
  int api_deadline_ms = 30000;
  // Reads of whole runs (GET /api/v1/runs/{run_id}) served at once, each holding its run in
  // memory while it is written; one more waits up to run_read_wait_ms for a turn, then is
  // answered 503 with Retry-After.
  int max_run_reads = 4;
  int run_read_wait_ms = 10000;
};

}  // namespace colltest::http
