// What lamport_tb and lamport_two_shot share on the GPU: the triple buffer's slots and the
// rotation counter (docs/design.md section 4, docs/protocol.md).
#pragma once

#include <cstdint>

#include "worker/backends/gpu/device_elem.cuh"
#include "worker/backends/gpu/device_sync.cuh"
#include "worker/protocol/triple_buffer.h"

namespace colltest::gpu {

__device__ __forceinline__ uint8_t* TbSlot(const DeviceGroup& g, uint32_t rank, uint32_t buffer,
                                           uint32_t src) {
  return g.base[rank] + g.layout.TbSlotOffset(buffer, src);
}

// What every block of one call agrees on.
struct TbCall {
  uint64_t call;
  uint32_t buf;          // pushed into and consumed
  uint32_t prev;         // cleared
  size_t prev_packs;     // packs the previous call used in `prev`
  const uint8_t* input;  // this rank's registered input slot
};

// The counter lives on the device and advances inside the kernel, so graph replays rotate too.
// Each block reads it, then counts itself in; block 0 advances it once every block has (TbAdvance).
// One thread reads it for the block: a thread of a late warp reading it on its own could see the
// value block 0 advanced after this block counted itself in. Every thread must call it.
__device__ __forceinline__ TbCall TbEnter(const DeviceGroup& g, const CallArgs& a) {
  RankControl* control = ControlOf(g);
  __shared__ uint64_t block_call;
  if (threadIdx.x == 0) {
    block_call = *reinterpret_cast<volatile uint64_t*>(&control->tb_call);
    AtomicAddReleaseDevice(&control->tb_blocks, 1u);
  }
  __syncthreads();
  TbCall c;
  c.call = block_call;
  c.buf = protocol::TbBuffer(c.call);
  c.prev = protocol::TbClearedBuffer(c.call);
  c.prev_packs = control->tb_used_bytes[c.prev] / 16;
  c.input = g.base[g.rank] + g.layout.input_offset + a.input_offset;
  return c;
}

// Thread 0 of block 0 records the call's size and advances the counter once every block counted
// itself in. Every block is co-resident and counts itself in at its start: the wait is short.
__device__ __forceinline__ void TbAdvance(const DeviceGroup& g, const TbCall& c, size_t packs,
                                          SpinClock& clk, Phase phase) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  RankControl* control = ControlOf(g);
  auto nobody = []() COLLTEST_INLINE_LAMBDA { return -1; };  // the blocks of this rank, not a peer
  auto all_counted = [](uint32_t blocks) COLLTEST_INLINE_LAMBDA { return blocks == gridDim.x; };
  if (!WaitArrived<PollOrder::kAcquireDevice32>(clk, g, phase, nobody, 0, &control->tb_blocks,
                                                all_counted)) {
    return;
  }
  control->tb_used_bytes[c.buf] = packs * 16;
  control->tb_blocks = 0;
  *reinterpret_cast<volatile uint64_t*>(&control->tb_call) = c.call + 1;
}

// Polls every peer's slot of pack `pack` in one loop until all arrived, keeping each value where
// the rank-order sum reads it. False when the wait gave up.
template <DType D, int W>
__device__ __forceinline__ bool PollPeers(const DeviceGroup& g, const TbCall& c, SpinClock& clk,
                                          size_t pack, Phase phase, uint4 (&v)[W]) {
  uint32_t missing = 0;
#pragma unroll
  for (int r = 0; r < W; ++r) {
    if (protocol::TbStaged(r, g.rank)) missing |= 1u << r;
  }
  // Every missing slot in one loop; the hang record names the lowest rank still missing.
  auto all_arrived = [&]() COLLTEST_INLINE_LAMBDA {
#pragma unroll
    for (int r = 0; r < W; ++r) {
      if ((missing & (1u << r)) == 0) continue;
      const uint4 p = PollLoad<PollOrder::kVolatile16>(TbSlot(g, g.rank, c.buf, r) + pack * 16);
      if (Arrived<D>(p)) {
        v[r] = p;
        missing &= ~(1u << r);
      }
    }
    return missing == 0;
  };
  auto lowest_missing = [&]() COLLTEST_INLINE_LAMBDA { return __ffs(missing) - 1; };
  return SpinWait(clk, g, phase, lowest_missing, pack, all_arrived);
}

}  // namespace colltest::gpu
