// Retention of the history database, applied in the background: at start and then every
// interval, finished runs beyond --history-max-runs, older than --history-max-age, or beyond
// --history-max-bytes of case results are deleted, oldest first; baselines and active runs never.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "absl/time/time.h"
#include "store/run_store.h"

namespace colltest::server {

struct RetentionPolicy {
  uint64_t max_runs = 0;                          // 0: no bound
  absl::Duration max_age = absl::ZeroDuration();  // zero: no bound
  uint64_t max_bytes = 0;                         // 0: no bound
};

class HistoryPruner {
 public:
  // `store` is not owned and must outlive the pruner. The first pass runs at once.
  HistoryPruner(store::RunStore* store, RetentionPolicy policy,
                absl::Duration interval = absl::Minutes(1));
  ~HistoryPruner();  // stops the thread
  HistoryPruner(const HistoryPruner&) = delete;
  HistoryPruner& operator=(const HistoryPruner&) = delete;

  // Passes completed so far (for tests).
  uint64_t passes() const;

 private:
  void Loop();
  void PruneOnce();

  store::RunStore* const store_;
  const RetentionPolicy policy_;
  const absl::Duration interval_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  uint64_t passes_ = 0;
  std::thread thread_;
};

}  // namespace colltest::server
