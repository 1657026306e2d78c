// The numerics' way to show that a long host-side computation is still moving: a hook called once
// per row of work. The numerics stay pure (no shared memory, no knowledge of who watches); the
// worker passes its heartbeat (worker/heartbeat.h) so that the controller's watchdog sees a large
// reference or check advance (docs/cancel.md).
#pragma once

namespace colltest {

// nullptr: nobody watches.
using Progress = void (*)();

inline void ReportProgress(Progress progress) {
  if (progress != nullptr) progress();
}

}  // namespace colltest
