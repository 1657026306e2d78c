#include "worker/backends/cpu/posted_stores.h"

namespace colltest::cpu {

void RankPendingStores::Append(std::vector<PostedStore>& stores) {
  if (stores.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  pending_.insert(pending_.end(), stores.begin(), stores.end());
  stores.clear();
  // Bounded even when nothing releases (a broken protocol): old stores land eventually.
  if (pending_.size() > (size_t{1} << 20)) DrainLocked();
}

void RankPendingStores::DrainLocked() {
  for (const PostedStore& s : pending_) StoreWords(s.dst, s.w);
  pending_.clear();
}

void RankPendingStores::Drain() {
  std::lock_guard<std::mutex> lock(mu_);
  DrainLocked();
}

void RankPendingStores::Discard() {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.clear();
}

void PostedStores::Drain() {
  rank_->Drain();
  for (const PostedStore& s : entries_) StoreWords(s.dst, s.w);
  entries_.clear();
}

}  // namespace colltest::cpu
