// The cpu backend's memory model for protocol stores (staging, re-arming, clearing).
//
// On a GPU, a store becomes visible to other agents some time after it issues, and only a release
// operation orders it before a later flag store. x86 is far stronger, so protocol bugs that depend
// on ordering (a relaxed barrier, a two-buffer rotation) would never show on a CPU. To keep the
// cpu backend a faithful test of the protocols, protocol stores are posted, as to uncached memory
// on a GPU: they land in memory later, in the order each rank issued them.
//   - A block's stores land when it releases (barrier arrive), when it publishes what it produced,
//     when it has spun long enough (stores become visible eventually), and when its queue is full.
//   - At the end of a kernel a block's queue moves to its rank's pending list, which every later
//     drain of that rank writes first: the kernel boundary keeps one rank's stores in order.
//   - A relaxed flag store does not drain: it can overtake the stores before it, which is the
//     hazard release/acquire barriers exist for.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "worker/backends/cpu/pack.h"

namespace colltest::cpu {

// The pack's words without its 16-byte alignment: 24 bytes a store instead of 32, and a queue
// entry is written and read once per protocol store (lamport_tb posts W - 1 of them per pack).
struct PostedStore {
  void* dst;
  uint32_t w[4];
};

// Per rank: the posted stores of its finished kernels.
class RankPendingStores {
 public:
  void Append(std::vector<PostedStore>& stores);
  void Drain();
  // Drops stores of aborted calls (before a reset).
  void Discard();

 private:
  void DrainLocked();
  std::mutex mu_;
  std::vector<PostedStore> pending_;
};

class PostedStores {
 public:
  // A full queue drains by itself, bounding memory and modelling eventual visibility.
  static constexpr size_t kCapacity = 1 << 15;

  explicit PostedStores(RankPendingStores* rank) : rank_(rank) {}

  void Store(void* dst, const Pack& value) {
    if (entries_.size() == kCapacity) Drain();
    entries_.push_back({dst, {value.w[0], value.w[1], value.w[2], value.w[3]}});
  }
  // Makes every store of this rank's finished kernels and of this block visible, in order.
  void Drain();
  // End of kernel: the block's stores stay in flight but now belong to the rank.
  void EndKernel() { rank_->Append(entries_); }

 private:
  RankPendingStores* rank_;
  std::vector<PostedStore> entries_;
};

}  // namespace colltest::cpu
