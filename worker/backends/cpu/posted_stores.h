// The cpu backend's memory model for protocol stores (staging, re-arming, clearing).
//
// On a GPU, a store becomes visible to other agents some time after it issues, and only a release
// operation orders it before a later flag store. x86 is far stronger, so protocol bugs that depend
// on ordering (a relaxed barrier, a two-buffer rotation) would never show on a CPU. To keep the
// cpu backend a faithful test of the protocols, protocol stores go through this queue:
//   - a store to a peer's memory is posted: invisible until it drains;
//   - a store to the rank's own memory is visible at once (a rank sees its own stores) and also
//     marks the location dirty in the rank's cache; draining writes the rank's latest value of
//     every dirty location back, so if a peer wrote it in between without the ordering the
//     protocol promises, the peer's data is lost, as with a dirty cache line written back late;
//   - a block drains on release (barrier arrive), when it has spun long enough (stores become
//     visible eventually), when its queue is full, and at host synchronisation points;
//   - at the end of a kernel a block's queue moves to its rank's pending list, which every later
//     drain of that rank writes first (after the dirty lines): the kernel boundary orders them
//     before that drain.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "worker/backends/cpu/pack.h"

namespace colltest::cpu {

struct PostedStore {
  void* dst;
  Pack value;
};

// Per rank: its dirty lines and the posted stores of its finished kernels.
class RankPendingStores {
 public:
  void Append(std::vector<PostedStore>& stores);
  // Stores into this rank's memory and marks the line dirty, as one step: a block that sees the
  // value and overwrites it must also be the later writer of the dirty line.
  void StoreLocal(void* dst, const Pack& value);
  // Writes back the dirty lines, then the finished kernels' posted stores.
  void Drain();
  // Drops stores of aborted calls (before a reset).
  void Discard();

 private:
  void DrainLocked();
  std::mutex mu_;
  absl::flat_hash_map<void*, Pack> dirty_;
  std::vector<PostedStore> pending_;
};

class PostedStores {
 public:
  // A full queue drains by itself, bounding memory and modelling eventual visibility.
  static constexpr size_t kCapacity = 1 << 15;

  explicit PostedStores(RankPendingStores* rank) : rank_(rank) {}

  // A store into a peer's memory.
  void StoreRemote(void* dst, const Pack& value) {
    if (entries_.size() == kCapacity) Drain();
    entries_.push_back({dst, value});
  }
  // A store into this rank's own memory.
  void StoreLocal(void* dst, const Pack& value) { rank_->StoreLocal(dst, value); }
  // Makes every store of this rank's finished kernels and of this block visible, in order.
  void Drain();
  // End of kernel: the block's stores stay in flight but now belong to the rank.
  void EndKernel() { rank_->Append(entries_); }

 private:
  RankPendingStores* rank_;
  std::vector<PostedStore> entries_;
};

}  // namespace colltest::cpu
