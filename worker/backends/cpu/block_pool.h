// Blocks as threads. A pool of `resident` threads plays the role of a GPU's co-resident blocks:
// a launch of `grid` blocks runs block b on thread b % resident, so a grid larger than the pool
// runs in waves, exactly the situation in which a persistent kernel whose blocks wait for each
// other deadlocks. Kernels therefore clamp their grid to resident().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "worker/backends/cpu/posted_stores.h"

namespace colltest::cpu {

class BlockPool {
 public:
  using Kernel = std::function<void(uint32_t block, uint32_t grid, PostedStores& posted)>;

  BlockPool(uint32_t resident, RankPendingStores* pending);
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  uint32_t resident() const { return static_cast<uint32_t>(threads_.size()); }
  // Runs `kernel` on `grid` blocks and returns when all finished (a synchronous launch).
  void Launch(uint32_t grid, const Kernel& kernel);

 private:
  void ThreadMain(uint32_t index);

  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  uint64_t generation_ = 0;
  uint32_t grid_ = 0;
  uint32_t running_ = 0;
  bool stop_ = false;
  const Kernel* kernel_ = nullptr;
  std::vector<std::unique_ptr<PostedStores>> posted_;
  std::vector<std::thread> threads_;
};

}  // namespace colltest::cpu
