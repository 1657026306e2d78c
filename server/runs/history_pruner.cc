#include "server/runs/history_pruner.h"

#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

namespace colltest::server {

HistoryPruner::HistoryPruner(store::RunStore* store, RetentionPolicy policy,
                             absl::Duration interval)
    : store_(store), policy_(policy), interval_(interval), thread_([this] { Loop(); }) {}

HistoryPruner::~HistoryPruner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

uint64_t HistoryPruner::passes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return passes_;
}

void HistoryPruner::PruneOnce() {
  absl::StatusOr<uint64_t> deleted = store_->Prune(
      policy_.max_runs, policy_.max_age, policy_.max_bytes, absl::ToUnixMillis(absl::Now()));
  if (!deleted.ok()) {
    spdlog::error("history: retention pass failed: {}", std::string(deleted.status().message()));
  } else if (*deleted > 0) {
    spdlog::info("history: retention deleted {} run(s)", *deleted);
  }
}

void HistoryPruner::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    PruneOnce();
    lock.lock();
    ++passes_;
    wake_.wait_for(lock, absl::ToChronoMilliseconds(interval_), [this] { return stopping_; });
  }
}

}  // namespace colltest::server
