// What one block of a kernel sees: its rank's view of the group, its spin guard and its queue of
// posted stores.
#pragma once

#include <cstdint>

#include "worker/backends/cpu/posted_stores.h"
#include "worker/backends/cpu/protocol_breaks.h"
#include "worker/backends/cpu/rank_memory.h"
#include "worker/backends/cpu/spin.h"

namespace colltest::cpu {

struct GroupView {
  uint32_t rank = 0;
  uint32_t world = 0;
  RankMemory peers[kMaxRanks];  // peers[rank] is this rank's own segment
  const RankMemory& self() const { return peers[rank]; }
};

struct BlockContext {
  const GroupView* group;
  uint32_t block;
  uint32_t grid;
  SpinGuard* guard;
  PostedStores* posted;
  const ProtocolBreaks* breaks;
};

}  // namespace colltest::cpu
