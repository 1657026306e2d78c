// colltestd's file descriptor budget: every client connection, worker socket, pipe and pidfd is
// one, and running out is what used to break the daemon (accept stopped for good, workers could not
// be spawned). The soft limit is raised to the hard one at start, and client connections are capped
// so that the worker pool always finds the descriptors it needs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace colltest::server {

struct FdLimits {
  uint64_t soft_before = 0;  // the soft RLIMIT_NOFILE colltestd was started with
  uint64_t soft = 0;         // after raising it
  uint64_t hard = 0;
};

// Raises the soft RLIMIT_NOFILE to the hard limit (capped by /proc/sys/fs/nr_open when the hard
// limit is unlimited). Errors only when the limits cannot be read; a refused raise keeps the old
// soft limit, which the result then reports.
absl::StatusOr<FdLimits> RaiseFdLimit();

// Descriptors kept free for everything that is not a client connection: 64 for the process itself
// (stdio, gRPC's epoll and wakeup fds, the metrics listener and its clients, probes) plus 8 per
// device. Measured on the cpu backend: 11 fds at idle, 2 per live worker (its pidfd and its channel
// socket) and 5 more while it spawns (two pipes and the heartbeat memfd); 8 per device covers a
// whole group respawning while the old one is still being reaped.
uint64_t FdReserve(size_t devices);

// The default --max-connections: min(1024, (soft limit - reserve) / 2), at least 16. Half of what
// the reserve leaves stays free so that a full cap never meets EMFILE in accept or in the workers'
// spawn (gRPC's own descriptors for a connection come and go with it).
uint32_t DefaultMaxConnections(uint64_t soft_limit, size_t devices);

}  // namespace colltest::server
