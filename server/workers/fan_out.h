// Running one blocking call per rank at once, and reacting to the first rank that fails.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace colltest::server {

// Runs fn(i) for every i in [0, n), each on its own thread, and returns when all have returned.
// Synchronous gRPC calls block their thread, so a thread per rank is what puts all W calls in
// flight at once (ranks wait for each other inside a call; calling them one after another would
// deadlock).
void ParallelFor(size_t n, const std::function<void(size_t)>& fn);

// Ranks of a group wait for each other in barriers, so when one fails the others may wait until
// their own deadlines. This records the first failing rank and runs `on_first` (typically: SIGKILL
// the whole group) once, on that rank's thread, so the other ranks' calls fail at once instead.
class FirstFailure {
 public:
  explicit FirstFailure(std::function<void()> on_first) : on_first_(std::move(on_first)) {}

  void Record(size_t rank);
  std::optional<size_t> rank() const;

 private:
  std::function<void()> on_first_;
  mutable absl::Mutex mu_;
  std::optional<size_t> rank_ ABSL_GUARDED_BY(mu_);
};

}  // namespace colltest::server
