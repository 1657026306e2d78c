#include "worker/backends/cpu/rank_memory.h"

#include <algorithm>

namespace colltest::cpu {
namespace {
constexpr size_t kAlign = 4096;
size_t AlignUp(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }
// The triple buffer holds world copies of a rank's input three times over; cap what it supports
// so that an 8-rank group stays within a few hundred MiB of shared memory.
constexpr size_t kTbCapacityLimit = size_t{4} << 20;
}  // namespace

RankLayout MakeRankLayout(size_t capacity, uint32_t world) {
  RankLayout l;
  l.capacity = AlignUp(capacity);
  l.tb_capacity = std::min(l.capacity, kTbCapacityLimit);
  l.world = world;
  size_t off = 0;
  l.signal_offset = off;
  off = AlignUp(off + sizeof(Signal));
  l.tb_control_offset = off;
  off = AlignUp(off + sizeof(TripleBufferControl));
  l.input_offset = off;
  off += l.capacity;
  l.tmp_offset = off;
  off += l.capacity;
  l.lamport_offset = off;
  off += l.capacity;
  l.tb_offset = off;
  off += 3 * static_cast<size_t>(world) * l.tb_capacity;
  l.total = off;
  return l;
}

}  // namespace colltest::cpu
