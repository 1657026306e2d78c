// Removal of the POSIX shared-memory segments that cpu-backend workers export as buffer handles.
// A SIGKILLed worker cannot unlink its own segments, so the controller does it for them.
#pragma once

#include <string>

#include "absl/types/span.h"

namespace colltest::server {

// Workers name their segments "/colltest.<controller pid>.<worker pid>.<n>" (in /dev/shm without
// the leading slash); the two pids are what lets the controller find segments it was never told of.

// Unlinks each name that is a valid shared-memory name; ones already gone are not an error.
void UnlinkShmNames(absl::Span<const std::string> names);

// Unlinks every segment that one of `worker_pids`, spawned by this process, created. Catches the
// segments of a worker killed after creating them but before reporting them in its Init reply.
void UnlinkShmOfWorkers(absl::Span<const int> worker_pids);

// Unlinks every segment whose controller is no longer alive (a controller that was SIGKILLed or
// crashed had no chance to clean up). Assumes /dev/shm is private to this pid namespace, as it is
// in a container with its own IPC namespace: a live controller outside our pid namespace would look
// dead.
void UnlinkStaleShm();

}  // namespace colltest::server
