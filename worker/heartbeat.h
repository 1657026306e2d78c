// Progress beats for the controller's watchdog. colltestd maps one word of shared memory per
// worker (passed as --heartbeat-fd) and watches it while a case runs: a worker whose word stops
// moving for longer than the case timeout plus a grace period is stuck (stopped, deadlocked,
// wedged in a driver call) and is killed with its group, however many calls the case has. Beats
// come from the places that make progress: every call, every few polls of a bounded spin, every
// row of the host-side numerics, and the host's waits for the GPU.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstdint>

namespace colltest::worker {

inline std::atomic<uint64_t>* heartbeat_word = nullptr;

// Maps the controller's heartbeat page; false when `fd` is not one (the worker then runs without).
inline bool AttachHeartbeat(int fd) {
  void* page =
      mmap(nullptr, sizeof(std::atomic<uint64_t>), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (page == MAP_FAILED) return false;
  heartbeat_word = static_cast<std::atomic<uint64_t>*>(page);
  return true;
}

// A relaxed increment of one shared word: cheap enough for a spin loop's slow path.
inline void Beat() {
  if (std::atomic<uint64_t>* word = heartbeat_word) word->fetch_add(1, std::memory_order_relaxed);
}

}  // namespace colltest::worker
