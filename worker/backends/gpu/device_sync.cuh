// Bounded spinning, hang records and the per-block barriers across ranks
// (docs/design.md sections 4, 7). Every device wait goes through SpinTick: every few hundred polls
// it reads the global timer and the rank's abort flag, and past the call's deadline it records who
// waited for whom in host-mapped memory, raises the abort flag for the other blocks and gives up.
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
    while (!protocol::EpochReached(LoadAcquireSys(in), epoch)) {
      if (!SpinTick(clk, g, phase, static_cast<int>(t), 0)) {
        failed = 1;
        break;
      }
    }
  }
  const bool any_failed = __syncthreads_or(failed) != 0;
  if (t == 0) *epoch_ptr = epoch;
  return !any_failed;
}

}  // namespace colltest::gpu
