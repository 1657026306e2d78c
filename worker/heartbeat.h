// The worker's side of its page shared with colltestd (common/worker_page.h): progress beats for
// the controller's watchdog, the peer it waits for, and the controller's cancel request. Beats come
// from the places that make progress: every call, every few polls of a bounded spin, every row of
// the host-side numerics, and the host's waits for the GPU. A worker started without a page (unit
// tests) beats into nothing and is never cancelled.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstdint>

#include "common/worker_page.h"

namespace colltest::worker {

inline WorkerPage* worker_page = nullptr;

// Maps the controller's page; false when `fd` is not one (the worker then runs without).
inline bool AttachHeartbeat(int fd) {
  void* page = mmap(nullptr, sizeof(WorkerPage), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (page == MAP_FAILED) return false;
  worker_page = static_cast<WorkerPage*>(page);
  return true;
}

// A relaxed increment of one shared word: cheap enough for a spin loop's slow path.
inline void Beat() {
  if (WorkerPage* page = worker_page) page->beats.fetch_add(1, std::memory_order_relaxed);
}

// A unit of work completed (a call, a row of inputs, of a reference or of a check): progress for
// the controller's host deadline, and a beat. Not for waits: a wait beats, it does not progress.
inline void Advance() {
  if (WorkerPage* page = worker_page) {
    page->progress.fetch_add(1, std::memory_order_relaxed);
    page->beats.fetch_add(1, std::memory_order_relaxed);
  }
}

// True once the controller asked this worker to stop its case: checked between calls and in the
// slow path of every bounded spin, so a cancelled case ends within one call or one poll.
inline bool CancelRequested() {
  WorkerPage* page = worker_page;
  return page != nullptr && page->cancel.load(std::memory_order_relaxed) != 0;
}

// Announces (peer >= 0) or withdraws (-1) the peer this rank waits for. The controller reads it
// when it stops a rank that did not answer. A backend whose blocks wait at once keeps one word for
// all of them (the cpu backend's SpinGuard), and keeps naming the peer of a wait that timed out
// until its next call.
inline void Awaiting(int peer) {
  if (WorkerPage* page = worker_page) {
    page->awaiting_plus_one.store(peer < 0 ? 0u : static_cast<uint32_t>(peer) + 1,
                                  std::memory_order_relaxed);
  }
}

// Marks the kernel plugin entry point this rank is inside (PluginEntry::kNone when it returned),
// and the call of a launch, for the controller to name if the rank never comes back.
inline void InPlugin(PluginEntry entry, uint64_t call = 0) {
  if (WorkerPage* page = worker_page) {
    page->plugin_call.store(call, std::memory_order_relaxed);
    page->plugin_entry.store(static_cast<uint32_t>(entry), std::memory_order_relaxed);
  }
}

// InPlugin for the life of a scope.
class InPluginScope {
 public:
  explicit InPluginScope(PluginEntry entry, uint64_t call = 0) { InPlugin(entry, call); }
  ~InPluginScope() { InPlugin(PluginEntry::kNone); }
  InPluginScope(const InPluginScope&) = delete;
  InPluginScope& operator=(const InPluginScope&) = delete;
};

}  // namespace colltest::worker
