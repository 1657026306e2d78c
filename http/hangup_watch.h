// Notices a client that closed its connection while its unary call still waits. A Health check
// over HTTP may queue and run cases for minutes, and its reply (status line included) can only be
// sent once it ends, so no heartbeat can be written as for a sweep (stream_heartbeat.h). CivetWeb
// 1.15 gives no socket either: the watch finds the connection's socket among the process's
// descriptors (its peer is the request's client address and port, its local port the server's)
// and polls it for the peer's hang-up; a hang-up cancels the call, and with it the check's runs.
// A client that shuts down only its sending side before the reply counts as gone too.
#pragma once

#include <atomic>
#include <thread>

#include "grpcpp/client_context.h"

struct mg_connection;

namespace colltest::http {

class HangupWatch {
 public:
  // Watches the connection of `conn`; `context` (which must outlive this) is cancelled when the
  // client hangs up. Watches nothing when the socket cannot be found (the call then ends as
  // before: when it finishes or the gateway stops).
  HangupWatch(mg_connection* conn, grpc::ClientContext& context);
  ~HangupWatch();  // stops watching (joins its thread at once)
  HangupWatch(const HangupWatch&) = delete;
  HangupWatch& operator=(const HangupWatch&) = delete;

  bool watching() const { return thread_.joinable(); }
  bool client_gone() const { return client_gone_.load(); }

 private:
  void Watch(int socket);

  grpc::ClientContext& context_;
  int stop_event_ = -1;  // an eventfd: written to stop the watch
  std::atomic<bool> client_gone_{false};
  std::thread thread_;
};

// The connection's TCP socket (see above), or -1 when none matches.
int FindConnectionSocket(mg_connection* conn);

}  // namespace colltest::http
