// How the worker pool starts and supervises its groups. A header of its own so that
// server/workers/worker_group.h can take the options without depending on the pool that owns the
// groups.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "colltest/v1/worker.pb.h"
#include "common/defaults.h"
#include "server/devices/device_placement.h"
#include "server/workers/group_health.h"

namespace colltest::server {

struct WorkerPoolOptions {
  std::string worker_binary;  // path of colltest-worker
  std::string backend;        // "cpu", "cuda" or "hip" (already resolved, never "auto")
  // The GPU each device index's worker runs on (colltestd --ranks-per-gpu); identity by default.
  DevicePlacement placement;
  std::string
      runtime_dir;  // parent for the private 0700 directory; empty = $XDG_RUNTIME_DIR or /tmp
  uint64_t max_case_bytes = kDefaultMaxCaseBytes;
  absl::Duration spawn_timeout = absl::Seconds(20);
  // Extra time past a case's own deadline before a silent worker is declared hung and killed.
  absl::Duration grace = absl::Seconds(2);
  // A rank whose heartbeat stands still for the case timeout plus this is stuck and is killed
  // with its group (the watchdog), however long the whole case may take.
  absl::Duration heartbeat_grace = absl::Seconds(1);
  // Run on a respawned group before it serves again; none when its variant is unspecified.
  colltest::worker::v1::CaseRequest canary;
  // Respawn and canary a failed group at once, in the background, so that it is ready (and its
  // state known) before the next request; false: at the next case on its devices.
  bool eager_recovery = true;
  // Told of every change of a group's state, from the thread that made it.
  GroupStateListener on_state_change;
  // A group that has run no case for this long is shut down (its workers end and free their
  // device memory) and started again by the next case on its devices, without a canary: a clean
  // exit is no failure. Not a restart; its GroupHealth stays SERVING with a message saying it is
  // idle (IsIdleMessage). Zero: groups live until a failure or Shutdown().
  absl::Duration idle_timeout = absl::ZeroDuration();
  // The kernel plugins colltestd loaded (docs/plugins.md); every rank of every group loads them.
  std::vector<colltest::v1::KernelPlugin> kernel_plugins;
};

}  // namespace colltest::server
