// The listening sockets of colltestd's own accept loop: "host:port" (every address the host
// resolves to; port 0 lets the system choose one, shared by all of them) or "unix:PATH".
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace colltest::server {

struct ListenSockets {
  std::vector<UniqueFd> fds;  // non-blocking, close-on-exec, listening
  std::string address;        // as clients dial it: "HOST:PORT" with the bound port, or "unix:PATH"
  std::string unix_path;      // the socket file to remove at the end; empty for TCP
};

// Binds and listens with `backlog`. A stale socket file left at a unix path is replaced, as gRPC's
// own listener does; any other file there is an error.
absl::StatusOr<ListenSockets> BindListenSockets(const std::string& listen, int backlog);

}  // namespace colltest::server
