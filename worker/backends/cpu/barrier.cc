#include "worker/backends/cpu/barrier.h"

#include <atomic>

namespace colltest::cpu {
namespace {

bool ArriveAndWait(const GroupView& group, uint32_t* own_epoch,
                   uint32_t* (*slot_of)(Signal*, uint32_t, uint32_t), uint32_t block,
                   SpinGuard& guard, PostedStores& posted, bool release, const char* phase) {
  const uint32_t epoch = ++*own_epoch;
  const auto publish = release ? std::memory_order_release : std::memory_order_relaxed;
  if (release) posted.Drain();
  for (uint32_t p = 0; p < group.world; ++p) {
    std::atomic_ref<uint32_t>(*slot_of(group.peers[p].signal(), block, group.rank))
        .store(epoch, publish);
  }
  Signal* self = group.self().signal();
  for (uint32_t p = 0; p < group.world; ++p) {
    std::atomic_ref<uint32_t> seen(*slot_of(self, block, p));
    const bool ok = SpinUntil(
        guard, posted, static_cast<int>(block), static_cast<int>(p), phase,
        [&] { return protocol::EpochReached(seen.load(std::memory_order_acquire), epoch); });
    if (!ok) return false;
  }
  return true;
}

uint32_t* StartSlot(Signal* s, uint32_t block, uint32_t rank) { return &s->start[block][rank]; }
uint32_t* EndSlot(Signal* s, uint32_t block, uint32_t rank) { return &s->end[block][rank]; }
uint32_t* HostSlot(Signal* s, uint32_t, uint32_t rank) { return &s->host[rank]; }

}  // namespace

bool BlockBarrier(const BlockContext& ctx, BarrierSlot slot, const char* phase) {
  Signal* self = ctx.group->self().signal();
  const bool start = slot == BarrierSlot::kStart;
  // The participants of a block barrier are block `block` of every rank: each passes it the same
  // number of times (the block-uniform trip count of docs/design.md section 4), once per phase.
  // divergent_trip_count (tests only) gives block 0 of the last rank a second trip.
  const bool extra_trip =
      ctx.breaks->divergent_trip_count && ctx.block == 0 && ctx.group->rank + 1 == ctx.group->world;
  for (int trip = extra_trip ? 2 : 1; trip > 0; --trip) {
    if (!ArriveAndWait(*ctx.group,
                       start ? &self->start_epoch[ctx.block] : &self->end_epoch[ctx.block],
                       start ? StartSlot : EndSlot, ctx.block, *ctx.guard, *ctx.posted,
                       !ctx.breaks->relaxed_barriers, phase)) {
      return false;
    }
  }
  return true;
}

bool HostBarrier(const GroupView& group, SpinGuard& guard, PostedStores& posted) {
  Signal* self = group.self().signal();
  return ArriveAndWait(group, &self->host_epoch, HostSlot, 0, guard, posted, /*release=*/true,
                       "host barrier");
}

}  // namespace colltest::cpu
