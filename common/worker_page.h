// The page of shared memory between colltestd and one colltest-worker (a memfd passed as
// --heartbeat-fd). The worker writes its progress and what it waits for; the controller writes the
// cancel request. Both sides map this one struct, so the layout is the protocol: add fields at the
// end, never reorder. Every field is a lock-free atomic, since two processes touch it at once.
#pragma once

#include <atomic>
#include <cstdint>

namespace colltest {

struct WorkerPage {
  // Bumped by the worker while it computes, spins in a bounded wait, checks results or waits for
  // the device; the controller's watchdog kills a rank whose count stands still (docs/cancel.md).
  std::atomic<uint64_t> beats{0};
  // The peer the worker is waiting for right now, plus one (0: it waits for nobody). Read by the
  // controller when it has to stop a rank that did not answer, so that the verdict names the rank
  // the others were waiting for, whoever ran out of time first.
  std::atomic<uint32_t> awaiting_plus_one{0};
  // Nonzero: the controller asks the worker to stop the case now (Cancel, client gone, shutdown).
  // Set before the case is abandoned, cleared by the controller before the next case.
  std::atomic<uint32_t> cancel{0};
  // The kernel plugin entry point the worker is inside (a PluginEntry; kNone outside), and the call
  // index of a launch: what the controller names when a rank dies inside, or never comes back
  // from, a kernel colltest did not write (docs/plugins.md).
  std::atomic<uint32_t> plugin_entry{0};
  std::atomic<uint64_t> plugin_call{0};
  // Bumped by the worker when a unit of work completes: a call, a row of inputs, of a reference or
  // of a check. Waiting beats `beats` but not this. The controller's host deadline measures it:
  // a case whose ranks all stand still here for longer than a call may take is stopped, however
  // long the case has run, and a case that keeps completing work is not
  // (server/workers/case_deadline.h).
  std::atomic<uint64_t> progress{0};
};

// Where in a kernel plugin a worker is. kKernel: waiting for the work a launch enqueued (GPU).
enum class PluginEntry : uint32_t { kNone, kWorkspaceBytes, kInit, kArm, kLaunch, kFini, kKernel };

inline const char* PluginEntryName(uint32_t entry) {
  switch (static_cast<PluginEntry>(entry)) {
    case PluginEntry::kWorkspaceBytes:
      return "workspace_bytes";
    case PluginEntry::kInit:
      return "init";
    case PluginEntry::kArm:
      return "arm";
    case PluginEntry::kLaunch:
      return "launch";
    case PluginEntry::kFini:
      return "fini";
    case PluginEntry::kKernel:
      return "kernel";
    default:
      return "";
  }
}

static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

}  // namespace colltest
