// The signal mask of colltest's daemons. colltestd and colltest-worker block their stop signals
// before any thread exists, so that every thread (gRPC's included) inherits the mask and the
// signals reach only the one thread that waits for them in sigwait. The mask survives exec, so a
// child started from such a process clears it first.
#pragma once

#include <signal.h>

namespace colltest::common {

// Blocks SIGINT and SIGTERM in the calling thread and ignores SIGPIPE, so that a peer that hangs
// up does not end the process. Call before any thread starts; returns the set to sigwait on.
sigset_t BlockStopSignals();

// Unblocks every signal of the calling thread. Async-signal-safe: for a child between fork and
// exec.
void UnblockAllSignals();

}  // namespace colltest::common
