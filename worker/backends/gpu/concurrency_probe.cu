// The kernels of the concurrency probe (concurrency_probe.h): one thread each, a flag ping-pong
// between two processes through one IPC-mapped buffer, every wait bounded by the device clock.
#include "worker/backends/gpu/concurrency_probe.h"

namespace colltest::gpu {
namespace {

// Waits until *word holds `want`; false at the stop word or past `deadline_ns`. The clock is read
// on every poll: a round trip under MPS is below a microsecond, so a coarser check would not save
// anything that matters, and the bound stays exact.
__device__ bool WaitForWord(const uint32_t* word, uint32_t want, uint64_t deadline_ns) {
  for (;;) {
    const uint32_t v = LoadVolatile32(word);
    if (v == want) return true;
    if (v == kProbeStopWord || GlobalTimerNs() > deadline_ns) return false;
  }
}

// The parent: ping 1 is the handshake (it waits until the child's kernel runs at all, which
// includes the child's launch), then pings 2, 3, ... are timed one by one until
// kProbeMaxRoundTrips or kProbeMeasureNs. The stop word ends the child's kernel either way.
__device__ void Ping(ProbeBuffer* b) {
  ProbeResult r;
  const uint64_t start = GlobalTimerNs();
  StoreRelaxedSys(&b->ping, 1);
  r.handshake = WaitForWord(&b->pong, 1, start + kProbeHandshakeNs) ? 1 : 0;
  const uint64_t t0 = GlobalTimerNs();
  uint64_t last = t0;
  uint32_t n = 0;
  while (r.handshake != 0 && n < kProbeMaxRoundTrips) {
    const uint32_t word = n + 2;
    StoreRelaxedSys(&b->ping, word);
    if (!WaitForWord(&b->pong, word, t0 + kProbeMeasureNs)) break;
    const uint64_t now = GlobalTimerNs();
    const uint64_t took = now - last;
    b->round_ns[n++] = took > 0xffffffffull ? 0xffffffffu : static_cast<uint32_t>(took);
    last = now;
  }
  StoreRelaxedSys(&b->ping, kProbeStopWord);
  r.round_trips = n;
  // Without a handshake, the time it was waited for.
  r.elapsed_ns = r.handshake != 0 ? last - t0 : t0 - start;
  b->result = r;
}

// The child: echoes each ping until the stop word or its own deadline, which covers the parent's
// whole run (the parent's kernel started first).
__device__ void Pong(ProbeBuffer* b) {
  const uint64_t deadline = GlobalTimerNs() + kProbeHandshakeNs + kProbeMeasureNs;
  for (uint32_t word = 1; WaitForWord(&b->ping, word, deadline); ++word) {
    StoreRelaxedSys(&b->pong, word);
  }
}

__global__ void ProbeKernel(ProbeBuffer* b, ProbeRole role) {
  if (role == ProbeRole::kPing) {
    Ping(b);
  } else {
    Pong(b);
  }
}

}  // namespace

Error LaunchProbeKernel(ProbeBuffer* buffer, ProbeRole role, Stream stream) {
  ProbeKernel<<<1, 1, 0, stream>>>(buffer, role);
  return GetLastError();
}

}  // namespace colltest::gpu
