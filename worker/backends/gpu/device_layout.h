// Layout of one rank's registered device allocation, which every peer maps through CUDA/HIP IPC:
// Signal slots, device-resident control (lamport_tb counter, hang claim), the rotating registered
// inputs, the two_kernel staging, the PRIVATE Lamport staging and the lamport_tb triple buffer.
// Plain structs shared by host and kernels.
#pragma once

#include <cstddef>
#include <cstdint>

namespace colltest::gpu {

inline constexpr uint32_t kMaxRanks = 8;
// Signal slots are indexed by block, so every grid is clamped to this many blocks. Sized for up
// to 4 co-resident blocks per multiprocessor on a 256-multiprocessor device (a 132-SM H200 runs
// at most 2 x 132 spinning blocks of 512 threads or 4 x 132 of 256); the co-residency clamp, not
// this constant, is what limits a grid in practice.
inline constexpr uint32_t kMaxBlocks = 1024;
inline constexpr uint32_t kMaxInputSlots = 8;

struct alignas(128) Signal {
  uint32_t start[kMaxBlocks][kMaxRanks];  // start[b][r]: epoch rank r's block b reached
  alignas(128) uint32_t end[kMaxBlocks][kMaxRanks];
  alignas(128) uint32_t host[kMaxRanks];  // the host barrier after arming
  // Epochs written only by this rank's own blocks.
  alignas(128) uint32_t start_epoch[kMaxBlocks];
  alignas(128) uint32_t end_epoch[kMaxBlocks];
  uint32_t host_epoch;
};

// State that lives on the device so that graph replays advance it.
struct alignas(128) RankControl {
  uint64_t tb_call;           // lamport_tb calls completed
  uint64_t tb_used_bytes[3];  // bytes each source rank pushed into each buffer at its last use
  uint32_t tb_blocks_done;    // blocks of the current lamport_tb call that finished
  uint32_t hang_claimed;      // the first block to time out claims the hang record
  uint32_t aborted;           // set on a timeout; every spinning block of the rank gives up
};

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
  kFaultHangEndSync,  // not a wait: a rank that stopped by injected fault (hang_end_sync)
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

struct GpuLayout {
  size_t signal_offset = 0;
  size_t control_offset = 0;
  size_t input_offset = 0;  // kMaxInputSlots rotating slots share `capacity` bytes
  size_t tmp_offset = 0;
  size_t lamport_offset = 0;
  size_t tb_offset = 0;  // 3 buffers x world slots x tb_capacity
  size_t capacity = 0;
  size_t tb_capacity = 0;
  uint32_t world = 0;
  size_t total = 0;
};

GpuLayout MakeGpuLayout(size_t capacity, uint32_t world);

// One rank's view of the group, passed by value to every kernel.
struct DeviceGroup {
  uint8_t* base[kMaxRanks];  // base[rank] is this rank's own allocation
  GpuLayout layout;
  uint32_t rank;
  uint32_t world;
  HangRecord* hang;  // device address of the host-mapped record
};

}  // namespace colltest::gpu
