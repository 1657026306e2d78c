// The control structures at the start of a rank's registered memory: the Signal slots of the
// per-block barriers and the rank's control word block. Plain structs, read by the host and by
// the kernels of either backend.
#pragma once

#include <cstdint>

#include "worker/numerics/host_device.h"
#include "worker/protocol/limits.h"

namespace colltest::protocol {

// lamport_tb rotates over this many staging buffers (worker/protocol/triple_buffer.h).
inline constexpr uint32_t kTbBuffers = 3;

template <class L>
struct alignas(L::kAlign) Signal {
  uint32_t start[L::kMaxBlocks][kMaxRanks];  // start[b][r]: epoch rank r's block b reached
  alignas(L::kAlign) uint32_t end[L::kMaxBlocks][kMaxRanks];
  alignas(L::kAlign) uint32_t host[kMaxRanks];  // the host barrier after arming
  // Epochs written only by this rank's own blocks (its view of how many barriers each passed).
  alignas(L::kAlign) uint32_t start_epoch[L::kMaxBlocks];
  alignas(L::kAlign) uint32_t end_epoch[L::kMaxBlocks];
  uint32_t host_epoch;
};

// Whether a barrier epoch `seen` in a Signal slot reached `epoch`. Epochs only grow and a peer is
// at most one barrier ahead, so a wrap-safe >= is enough.
COLLTEST_HD bool EpochReached(uint32_t seen, uint32_t epoch) {
  return static_cast<int32_t>(seen - epoch) >= 0;
}

// State that lives in the rank's registered memory so that graph replays advance it.
template <class L>
struct alignas(L::kAlign) RankControl {
  uint64_t tb_call;                    // lamport_tb calls completed
  uint64_t tb_used_bytes[kTbBuffers];  // bytes each source rank pushed into each buffer
  // Blocks of the current lamport_tb call that read tb_call: each counts itself in right after
  // reading it, and block 0 advances tb_call at its end once every block has (so no block can
  // read the advanced value), then zeroes this.
  uint32_t tb_blocks;
  // The GPU's device-side hang record: the first block to time out claims it, and the abort flag
  // makes every spinning block of the rank give up. The cpu keeps both in its SpinGuard instead.
  uint32_t hang_claimed;
  uint32_t aborted;
};

}  // namespace colltest::protocol
