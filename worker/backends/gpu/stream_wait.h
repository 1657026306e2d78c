// Waiting for a stream while beating the controller's heartbeat: a replayed graph of thousands of
// calls, or a kernel spinning towards its timeout, is progress the watchdog must not mistake for
// a stuck worker. Timing is taken with events on the stream, so polling here costs no accuracy.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/heartbeat.h"

namespace colltest::gpu {

inline Error StreamSynchronizeBeating(Stream s) {
  // Yield first (most waits are microseconds), then sleep briefly so a long wait costs no core.
  constexpr uint32_t kYieldPolls = 1024;
  for (uint32_t polls = 0;; ++polls) {
    const Error e = StreamQuery(s);
    if (e != kNotReady) return e;
    if (polls % 64 == 0) worker::Beat();
    if (polls < kYieldPolls) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

}  // namespace colltest::gpu
