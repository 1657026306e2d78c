// Whether the kernels of two processes on one GPU run at the same time (`colltest-worker
// --concurrency-probe`, read by server/devices/concurrency_check.h). Ranks that share a GPU
// (colltestd --ranks-per-gpu, docs/shared-gpu.md) spin-wait on each other's flags, so their kernels
// must be resident together: on NVIDIA that takes MPS, without it the contexts of two processes
// are time-sliced and every flag round trip costs a time slice (measured on an H200: 4.5 ms,
// against 0.8 us under MPS).
//
// The probe forks before any runtime call (the CUDA runtime does not survive a fork). The parent
// allocates one ProbeBuffer and exports it through IPC to the child over a pipe; once the child
// has mapped it and says so, both launch a one-thread kernel that ping-pongs a flag pair in it,
// each wait bounded by the device clock, and the parent's kernel records every round trip's device
// time in the buffer. Host waits are bounded too and the child is always reaped: on a warm GPU the
// probe takes a few hundred milliseconds (context creation), its kernels at most half a second.
#pragma once

#include <cstdint>
#include <string>

#include "worker/backends/gpu/gpu_runtime.h"

namespace colltest::gpu {

// Round trips measured at most (the buffer holds each one's time).
inline constexpr uint32_t kProbeMaxRoundTrips = 1000;
// The first round trip, which waits until the child's kernel runs, is given this long; the round
// trips after it this long in all. Together with the processes' start they keep the probe near one
// second even where no round trip ever completes.
inline constexpr uint64_t kProbeHandshakeNs = 400'000'000;
inline constexpr uint64_t kProbeMeasureNs = 100'000'000;
// A median round trip above this is a time slice, not two resident kernels (0.8 us vs 4.5 ms).
inline constexpr uint64_t kProbeConcurrentMaxNs = 100'000;
// The word the parent stores last: the child's kernel ends at it instead of at its deadline.
inline constexpr uint32_t kProbeStopWord = 0xffffffffu;

// What the parent's kernel leaves in its ProbeBuffer.
struct ProbeResult {
  uint32_t handshake = 0;    // 1 once the child's kernel answered the first ping
  uint32_t round_trips = 0;  // timed round trips after the handshake
  uint64_t elapsed_ns = 0;   // device time of those round trips
};

// The one allocation both processes map. ping and pong sit 256 bytes apart: each is written by
// one process only, and no cache line holds both.
struct ProbeBuffer {
  uint32_t ping;  // the parent's word: 1 (handshake), 2, 3, ..., then kProbeStopWord
  uint32_t pad0[63];
  uint32_t pong;  // the child's echo of the last ping it saw
  uint32_t pad1[63];
  ProbeResult result;
  uint32_t round_ns[kProbeMaxRoundTrips];  // each timed round trip, saturated at 2^32 - 1 ns
};

enum class ProbeRole : uint32_t { kPing, kPong };

// Launches the ping (parent) or pong (child) kernel on `buffer`: one block of one thread, bounded
// by kProbeHandshakeNs + kProbeMeasureNs of device time (concurrency_probe.cu).
Error LaunchProbeKernel(ProbeBuffer* buffer, ProbeRole role, Stream stream);

// Runs the probe on `device` and returns its one JSON line:
//   {"concurrent":true,"round_trip_us":0.81,"round_trips":1000,"elapsed_ms":0.83}
//   {"concurrent":false,"round_trip_us":4482.13,"round_trips":22,"elapsed_ms":100.02}
//   {"concurrent":false,"round_trips":0,"elapsed_ms":400.00,"note":"..."}  (no round trip)
//   {"concurrent":false,"error":"cudaIpcOpenMemHandle: invalid argument (second process)"}
// round_trip_us is the median. Must be called before anything else of this process touches the
// GPU runtime (it forks).
std::string ConcurrencyProbeJson(int device);

}  // namespace colltest::gpu
