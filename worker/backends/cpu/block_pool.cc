#include "worker/backends/cpu/block_pool.h"

namespace colltest::cpu {

BlockPool::BlockPool(uint32_t resident, RankPendingStores* pending) {
  for (uint32_t i = 0; i < resident; ++i)
    posted_.push_back(std::make_unique<PostedStores>(pending));
  for (uint32_t i = 0; i < resident; ++i) threads_.emplace_back([this, i] { ThreadMain(i); });
}

BlockPool::~BlockPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void BlockPool::Launch(uint32_t grid, const Kernel& kernel) {
  std::unique_lock<std::mutex> lock(mu_);
  kernel_ = &kernel;
  grid_ = grid;
  running_ = resident();
  ++generation_;
  start_cv_.notify_all();
  done_cv_.wait(lock, [this] { return running_ == 0; });
  kernel_ = nullptr;
}

void BlockPool::ThreadMain(uint32_t index) {
  uint64_t seen = 0;
  PostedStores& posted = *posted_[index];
  for (;;) {
    const Kernel* kernel;
    uint32_t grid;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      kernel = kernel_;
      grid = grid_;
    }
    for (uint32_t block = index; block < grid; block += resident()) {
      (*kernel)(block, grid, posted);
    }
    // Whatever the block stored and did not release is still in flight after the kernel.
    posted.EndKernel();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--running_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace colltest::cpu
