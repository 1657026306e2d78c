// Layout of one rank's registered shared-memory segment, which every peer maps. It mirrors the
// GPU meta buffer: Signal slots first, then the registered inputs, the general staging region
// (two_kernel), the private Lamport staging and the lamport_tb triple buffer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace colltest::cpu {

inline constexpr uint32_t kMaxRanks = 8;
// Signal slots are indexed by block, so every grid is clamped to this many blocks.
inline constexpr uint32_t kMaxBlocks = 80;
inline constexpr uint32_t kMaxInputSlots = 8;

struct alignas(64) Signal {
  uint32_t start[kMaxBlocks][kMaxRanks];  // start[b][r]: epoch rank r's block b reached
  alignas(64) uint32_t end[kMaxBlocks][kMaxRanks];
  alignas(64) uint32_t host[kMaxRanks];  // host-level barrier (arming)
  // Epochs written only by this rank (its own view of how many barriers each block passed).
  alignas(64) uint32_t start_epoch[kMaxBlocks];
  alignas(64) uint32_t end_epoch[kMaxBlocks];
  uint32_t host_epoch;
};

// lamport_tb state that lives in device memory so that graph replays advance it.
struct alignas(64) TripleBufferControl {
  uint64_t call;           // lamport_tb calls completed
  uint64_t used_bytes[3];  // bytes each rank pushed into each buffer at its last use
  uint32_t blocks_done;    // blocks of the current call that finished
};

struct RankLayout {
  size_t signal_offset = 0;
  size_t tb_control_offset = 0;
  size_t input_offset = 0;  // kMaxInputSlots rotating slots share `capacity` bytes
  size_t tmp_offset = 0;
  size_t lamport_offset = 0;
  size_t tb_offset = 0;    // 3 buffers x world slots x tb_capacity
  size_t capacity = 0;     // largest m * n * sizeof(T) of a case
  size_t tb_capacity = 0;  // largest per-rank input lamport_tb supports
  uint32_t world = 0;
  size_t total = 0;

  size_t TbSlotOffset(uint32_t buffer, uint32_t src_rank) const {
    return tb_offset + (static_cast<size_t>(buffer) * world + src_rank) * tb_capacity;
  }
};

RankLayout MakeRankLayout(size_t capacity, uint32_t world);

// One rank's segment as mapped into this process.
struct RankMemory {
  uint8_t* base = nullptr;
  Signal* signal() const { return reinterpret_cast<Signal*>(base + layout->signal_offset); }
  TripleBufferControl* tb_control() const {
    return reinterpret_cast<TripleBufferControl*>(base + layout->tb_control_offset);
  }
  uint8_t* input() const { return base + layout->input_offset; }
  uint8_t* tmp() const { return base + layout->tmp_offset; }
  uint8_t* lamport() const { return base + layout->lamport_offset; }
  uint8_t* tb_slot(uint32_t buffer, uint32_t src_rank) const {
    return base + layout->TbSlotOffset(buffer, src_rank);
  }
  const RankLayout* layout = nullptr;
};

}  // namespace colltest::cpu
