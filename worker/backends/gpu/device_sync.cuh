// Bounded spinning, hang records and the per-block barriers across ranks
// (docs/design.md sections 4, 7). Every device wait is one SpinWait loop (WaitArrived for one
// flag) that ticks SpinTick on each miss: every few hundred polls it reads the global timer and the
// rank's abort flag, and past the call's deadline it records who waited for whom in host-mapped
// memory, raises the abort flag for the other blocks and gives up.
#pragma once

#include <cstdint>

#include "worker/backends/gpu/device_layout.h"
#include "worker/backends/gpu/gpu_runtime.h"

namespace colltest::gpu {

inline constexpr uint32_t kPollsPerCheck = 256;

__device__ __forceinline__ Signal* SignalOf(const DeviceGroup& g, uint32_t rank) {
  return reinterpret_cast<Signal*>(g.base[rank] + g.layout.signal_offset);
}
__device__ __forceinline__ RankControl* ControlOf(const DeviceGroup& g) {
  return reinterpret_cast<RankControl*>(g.base[g.rank] + g.layout.control_offset);
}

// The prologue of a kernel launched with LaunchEarly: wait until the kernels before it in the
// stream completed (their stores visible), then let the next early-launched kernel be scheduled
// (it only waits, in this same prologue, until this one completes). Before the deadline starts:
// time spent waiting for an earlier kernel is not this kernel's wait.
__device__ __forceinline__ void EnterEarlyLaunched() {
  GridDependencyWait();
  LaunchDependents();
}

struct SpinClock {
  uint64_t deadline_ns;
  uint32_t polls;
};

// Read once per block at kernel entry: the deadline counts from when the block started.
__device__ __forceinline__ SpinClock StartClock(uint64_t timeout_ns) {
  return SpinClock{GlobalTimerNs() + timeout_ns, 0};
}

__device__ __forceinline__ void RecordHang(const DeviceGroup& g, Phase phase, int peer,
                                           uint64_t pack) {
  RankControl* c = ControlOf(g);
  if (atomicCAS(&c->hang_claimed, 0u, 1u) == 0u) {
    volatile HangRecord* h = g.hang;
    h->rank = static_cast<int32_t>(g.rank);
    h->phase = static_cast<int32_t>(phase);
    h->block = static_cast<int32_t>(blockIdx.x);
    h->peer = peer;
    h->pack = pack;
    FenceSystem();
    h->valid = 1;
  }
  StoreVolatile32(&c->aborted, 1);
}

// False when the wait must end: the deadline passed (recorded) or another block gave up.
__device__ __forceinline__ bool SpinTick(SpinClock& clk, const DeviceGroup& g, Phase phase,
                                         int peer, uint64_t pack) {
  if (++clk.polls % kPollsPerCheck != 0) return true;
  if (LoadVolatile32(&ControlOf(g)->aborted) != 0) return false;
  if (GlobalTimerNs() > clk.deadline_ns) {
    RecordHang(g, phase, peer, pack);
    return false;
  }
  return true;
}

// How a wait loads what it polls. Each kind of site keeps the ordering it needs, so the ordering
// is the site's choice and the poll loop below is the same for all:
enum class PollOrder {
  kVolatile16,       // Lamport data as its own flag: one 16-byte load that always goes to memory
  kAcquireDevice32,  // a device-scope counter of this rank's blocks
  kAcquireSystem32,  // a barrier epoch a peer device stores with release
};

template <PollOrder O>
__device__ __forceinline__ auto PollLoad(const void* p) {
  if constexpr (O == PollOrder::kVolatile16) {
    return LoadVolatile16(p);
  } else if constexpr (O == PollOrder::kAcquireDevice32) {
    return LoadAcquireDevice(static_cast<const uint32_t*>(p));
  } else {
    return LoadAcquireSys(static_cast<const uint32_t*>(p));
  }
}

// The loop of every bounded device wait: `poll()` loads and compares (true: arrived); each miss
// ticks the wait (SpinTick), which at the deadline records `awaited()` as the peer and `pack`.
// `awaited` runs on each miss, where the expression it wraps always ran, and never on a hit.
// False when the wait gave up. Lambdas passed here are COLLTEST_INLINE_LAMBDA (gpu_runtime.h), so
// that the loop compiles as the hand-written one did.
template <class Poll, class Awaited>
__device__ __forceinline__ bool SpinWait(SpinClock& clk, const DeviceGroup& g, Phase phase,
                                         Awaited&& awaited, uint64_t pack, Poll&& poll) {
  while (!poll()) {
    if (!SpinTick(clk, g, phase, awaited(), pack)) return false;
  }
  return true;
}

// One flag: loads `flag` with ordering O until `arrived(value loaded)`. A site that needs the value
// that arrived keeps it in `arrived`; one that does not leaves no value live past the loop.
template <PollOrder O, class Arrived, class Awaited>
__device__ __forceinline__ bool WaitArrived(SpinClock& clk, const DeviceGroup& g, Phase phase,
                                            Awaited&& awaited, uint64_t pack, const void* flag,
                                            Arrived&& arrived) {
  return SpinWait(clk, g, phase, awaited, pack,
                  [&]() COLLTEST_INLINE_LAMBDA { return arrived(PollLoad<O>(flag)); });
}

enum class BarrierSlot { kStart, kEnd, kHost };

// Block b of every rank stores its new epoch into slot [b][rank] of every peer's Signal, then waits
// until every peer's epoch in its own Signal reached it. The store is a release preceded by a
// system fence, so everything this rank's block did before (inputs, re-arming of Lamport staging,
// cross-device stores) is visible to a peer that passes the barrier; the wait is an acquire.
// Block-uniform result; every thread of the block must call it.
__device__ __forceinline__ bool BlockBarrier(const DeviceGroup& g, BarrierSlot slot, SpinClock& clk,
                                             Phase phase) {
  Signal* self = SignalOf(g, g.rank);
  const uint32_t b = blockIdx.x;
  uint32_t* epoch_ptr = slot == BarrierSlot::kStart ? &self->start_epoch[b]
                        : slot == BarrierSlot::kEnd ? &self->end_epoch[b]
                                                    : &self->host_epoch;
  __syncthreads();
  const uint32_t epoch = *epoch_ptr + 1;
  int failed = 0;
  const uint32_t t = threadIdx.x;
  if (t < g.world) {
    Signal* peer = SignalOf(g, t);
    uint32_t* out = slot == BarrierSlot::kStart ? &peer->start[b][g.rank]
                    : slot == BarrierSlot::kEnd ? &peer->end[b][g.rank]
                                                : &peer->host[g.rank];
    const uint32_t* in = slot == BarrierSlot::kStart ? &self->start[b][t]
                         : slot == BarrierSlot::kEnd ? &self->end[b][t]
                                                     : &self->host[t];
    FenceSystem();
    StoreReleaseSys(out, epoch);
    using protocol::EpochReached;
    auto peer_t = [&]() COLLTEST_INLINE_LAMBDA { return static_cast<int>(t); };
    auto reached = [&](uint32_t e) COLLTEST_INLINE_LAMBDA { return EpochReached(e, epoch); };
    if (!WaitArrived<PollOrder::kAcquireSystem32>(clk, g, phase, peer_t, 0, in, reached)) {
      failed = 1;
    }
  }
  const bool any_failed = __syncthreads_or(failed) != 0;
  if (t == 0) *epoch_ptr = epoch;
  return !any_failed;
}

}  // namespace colltest::gpu
