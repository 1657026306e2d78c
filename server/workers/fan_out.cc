#include "server/workers/fan_out.h"

#include <thread>
#include <vector>

namespace colltest::server {

void ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 1) {
    fn(0);
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i) threads.emplace_back(fn, i);
  for (std::thread& thread : threads) thread.join();
}

void FirstFailure::Record(size_t rank) {
  {
    absl::MutexLock lock(&mu_);
    if (rank_.has_value()) return;
    rank_ = rank;
  }
  on_first_();
}

std::optional<size_t> FirstFailure::rank() const {
  absl::MutexLock lock(&mu_);
  return rank_;
}

}  // namespace colltest::server
