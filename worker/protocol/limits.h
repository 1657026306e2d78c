// The limits that size a rank's registered memory, one set per backend. Everything else of the
// protocol layer (worker/protocol) is written once and parameterised by one of these.
#pragma once

#include <cstddef>
#include <cstdint>

namespace colltest::protocol {

inline constexpr uint32_t kMaxRanks = 8;
// Rotating registered input slots, so that inputs that fit in a cache are not measured from it.
inline constexpr uint32_t kMaxInputSlots = 8;

// cpu backend: blocks are threads of a worker process on a small machine.
struct CpuLimits {
  // Signal slots are indexed by block, so every grid is clamped to this many blocks.
  static constexpr uint32_t kMaxBlocks = 80;
  // A cache line: no two Signal arrays share one.
  static constexpr size_t kAlign = 64;
  // A page: every region starts on its own page of the shared-memory segment.
  static constexpr size_t kRegionAlign = 4096;
  // The triple buffer holds world copies of a rank's input three times over; capped so that an
  // 8-rank group stays within a few hundred MiB of shared memory.
  static constexpr size_t kTbCapacityLimit = size_t{4} << 20;
};

// GPU backend (CUDA and HIP).
struct GpuLimits {
  // Up to 4 co-resident blocks per multiprocessor on a 256-multiprocessor device (a 132-SM H200
  // runs at most 2 x 132 spinning blocks of 512 threads or 4 x 132 of 256); the co-residency
  // clamp, not this constant, is what limits a grid in practice.
  static constexpr uint32_t kMaxBlocks = 1024;
  // The L2 line of the largest devices: no two Signal arrays share one.
  static constexpr size_t kAlign = 128;
  // 2 MiB keeps every region on its own large page, which IPC mappings prefer.
  static constexpr size_t kRegionAlign = size_t{2} << 20;
  static constexpr size_t kTbCapacityLimit = size_t{64} << 20;
};

}  // namespace colltest::protocol
