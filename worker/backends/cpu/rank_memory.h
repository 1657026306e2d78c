// One rank's registered shared-memory segment as mapped into this process. Its layout is the
// protocol layer's (worker/protocol/layout.h) under the cpu backend's limits, the same rule as
// the GPU's registered device allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "worker/protocol/control.h"
#include "worker/protocol/layout.h"
#include "worker/protocol/limits.h"

namespace colltest::cpu {

using Limits = protocol::CpuLimits;
using Signal = protocol::Signal<Limits>;
using RankControl = protocol::RankControl<Limits>;
using RankLayout = protocol::Layout;
inline constexpr uint32_t kMaxBlocks = Limits::kMaxBlocks;
using protocol::kMaxInputSlots;
using protocol::kMaxRanks;

inline RankLayout MakeRankLayout(size_t capacity, uint32_t world) {
  return protocol::MakeLayout<Limits>(capacity, world);
}

struct RankMemory {
  uint8_t* base = nullptr;
  Signal* signal() const { return reinterpret_cast<Signal*>(base + layout->signal_offset); }
  RankControl* control() const {
    return reinterpret_cast<RankControl*>(base + layout->control_offset);
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
