// One rank's registered device allocation, which every peer maps through CUDA/HIP IPC, laid out
// by the protocol layer (worker/protocol/layout.h) under the GPU's limits, and what the kernels
// see of the group. Plain structs shared by host and kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "worker/protocol/control.h"
#include "worker/protocol/layout.h"
#include "worker/protocol/limits.h"

namespace colltest::gpu {

using Limits = protocol::GpuLimits;
using protocol::kMaxInputSlots;
using protocol::kMaxRanks;
inline constexpr uint32_t kMaxBlocks = Limits::kMaxBlocks;
using Signal = protocol::Signal<Limits>;
using RankControl = protocol::RankControl<Limits>;
using GpuLayout = protocol::Layout;

// Where a kernel waited when it timed out (names in PhaseName).
enum class Phase : int32_t {
  kNone,
  kOneStageStart,
  kOneStageEnd,
  kTwoKernelStart,
  kTwoKernelEnd,
  kLamportStart,
  kLamportPhaseB,
  kLamportTbConsume,
  kHostBarrier,
  kFaultHangEndSync,      // not a wait: a rank that stopped by injected fault (hang_end_sync)
  kLamportTwoShotReduce,  // an owner waits for a peer's chunk
  kLamportTwoShotGather,  // a rank waits for an owner's sum
};

// Written by the device into host-mapped pinned memory; `valid` is stored last.
struct HangRecord {
  int32_t rank;
  int32_t phase;
  int32_t block;
  int32_t peer;
  uint64_t pack;
  uint32_t valid;
};

inline GpuLayout MakeGpuLayout(size_t capacity, uint32_t world) {
  return protocol::MakeLayout<Limits>(capacity, world);
}

// One rank's view of the group, passed by value to every kernel.
struct DeviceGroup {
  uint8_t* base[kMaxRanks];  // base[rank] is this rank's own allocation
  GpuLayout layout;
  uint32_t rank;
  uint32_t world;
  HangRecord* hang;  // device address of the host-mapped record
};

}  // namespace colltest::gpu
