// Layout of one rank's registered memory, which every peer maps (POSIX shared memory on the cpu,
// CUDA/HIP IPC on a GPU): the Signal slots, the rank's control block, the rotating registered
// inputs, the general staging region (two_kernel), the private Lamport staging and the lamport_tb
// triple buffer. One rule for both backends, parameterised by their limits (limits.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "worker/numerics/host_device.h"
#include "worker/protocol/control.h"

namespace colltest::protocol {

// Byte offsets from the start of a rank's registered memory. Passed by value to GPU kernels.
struct Layout {
  size_t signal_offset = 0;
  size_t control_offset = 0;
  size_t input_offset = 0;  // kMaxInputSlots rotating slots share `capacity` bytes
  size_t tmp_offset = 0;
  size_t lamport_offset = 0;
  size_t tb_offset = 0;    // kTbBuffers buffers x world slots x tb_capacity
  size_t capacity = 0;     // largest m * n * sizeof(T) of a case, rounded up to a region
  size_t tb_capacity = 0;  // largest per-rank input lamport_tb supports
  uint32_t world = 0;
  size_t total = 0;

  // The slot of `buffer` that holds what `src_rank` pushed into this rank's triple buffer.
  COLLTEST_HD size_t TbSlotOffset(uint32_t buffer, uint32_t src_rank) const {
    return tb_offset + (static_cast<size_t>(buffer) * world + src_rank) * tb_capacity;
  }
};

template <class L>
constexpr size_t AlignUp(size_t v) {
  return (v + L::kRegionAlign - 1) / L::kRegionAlign * L::kRegionAlign;
}

// The control block follows the Signal slots directly (both are aligned to L::kAlign); every
// data region starts on a region boundary.
template <class L>
constexpr Layout MakeLayout(size_t capacity, uint32_t world) {
  Layout l;
  l.capacity = AlignUp<L>(capacity);
  l.tb_capacity = l.capacity < L::kTbCapacityLimit ? l.capacity : L::kTbCapacityLimit;
  l.world = world;
  size_t off = 0;
  l.signal_offset = off;
  off += sizeof(Signal<L>);
  l.control_offset = off;
  off = AlignUp<L>(off + sizeof(RankControl<L>));
  l.input_offset = off;
  off += l.capacity;
  l.tmp_offset = off;
  off += l.capacity;
  l.lamport_offset = off;
  off += l.capacity;
  l.tb_offset = off;
  off += static_cast<size_t>(kTbBuffers) * world * l.tb_capacity;
  l.total = off;
  return l;
}

}  // namespace colltest::protocol
