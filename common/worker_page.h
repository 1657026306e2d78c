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
};

static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

}  // namespace colltest
