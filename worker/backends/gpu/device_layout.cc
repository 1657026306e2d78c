#include "worker/backends/gpu/device_layout.h"

#include <algorithm>

namespace colltest::gpu {
namespace {
// 2 MiB keeps every region on its own large page, which IPC mappings prefer.
constexpr size_t kAlign = size_t{2} << 20;
size_t AlignUp(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }
// The triple buffer holds world copies of a rank's input three times over.
constexpr size_t kTbCapacityLimit = size_t{64} << 20;
}  // namespace

GpuLayout MakeGpuLayout(size_t capacity, uint32_t world) {
  GpuLayout l;
  l.capacity = AlignUp(capacity);
  l.tb_capacity = std::min(l.capacity, kTbCapacityLimit);
  l.world = world;
  size_t off = 0;
  l.signal_offset = off;
  off += sizeof(Signal);
  l.control_offset = off;
  off = AlignUp(off + sizeof(RankControl));
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

}  // namespace colltest::gpu
