// A group of cpu ranks in one process for the triple-buffer kernels' tests (lamport_tb,
// lamport_two_shot): every rank's registered memory over one layout with its triple buffer armed,
// and one call of a kernel on every rank at once, each rank's blocks on its own pool. bf16 only;
// residual off, so residual_out is the all-reduce sum itself.
#pragma once

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "worker/backends/cpu/block_pool.h"
#include "worker/backends/cpu/kernels.h"
#include "worker/backends/cpu/lamport_protocol.h"
#include "worker/protocol/triple_buffer.h"

namespace colltest::cpu {

class CpuTbGroup {
 public:
  using Kernel = void (*)(const BlockContext&, const CallArgs&);

  // `max_count`: the largest m * n of a call; `layout_world`: the world size the layout is made
  // for (at least `world`).
  CpuTbGroup(uint32_t world, uint32_t layout_world, size_t max_count)
      : layout_(MakeRankLayout(1 << 16, layout_world)), ranks_(world) {
    for (Rank& rank : ranks_) {
      rank.mem.reset(new uint8_t[layout_.total]());
      rank.residual_out.resize(max_count);
      rank.out.resize(max_count);
      for (uint32_t b = 0; b < protocol::kTbBuffers; ++b) {
        for (uint32_t src = 0; src < world; ++src) {
          ArmStaging(DType::kBf16, rank.mem.get() + layout_.TbSlotOffset(b, src),
                     layout_.tb_capacity);
        }
      }
    }
    for (uint32_t r = 0; r < world; ++r) {
      ranks_[r].view.rank = r;
      ranks_[r].view.world = world;
      for (uint32_t p = 0; p < world; ++p) {
        ranks_[r].view.peers[p] = RankMemory{ranks_[p].mem.get(), &layout_};
      }
    }
  }

  // One call of `kernel` on every rank with inputs input(rank, i); then every store lands.
  template <class Input>
  void RunCall(Kernel kernel, uint32_t m, uint32_t n, uint32_t grid, Input&& input) {
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < ranks_.size(); ++r) {
      auto* in = reinterpret_cast<uint16_t*>(ranks_[r].view.self().input());
      for (size_t i = 0; i < size_t{m} * n; ++i) in[i] = FloatToBf16(input(r, i));
      threads.emplace_back([=, this] { RunRank(ranks_[r], kernel, m, n, grid); });
    }
    for (auto& t : threads) t.join();
    for (Rank& rank : ranks_) rank.pending.Drain();
  }

  const RankMemory& memory(uint32_t r) const { return ranks_[r].view.self(); }
  int hung_block(uint32_t r) const { return ranks_[r].guard.record().block; }
  uint16_t residual_out(uint32_t r, size_t i) const { return ranks_[r].residual_out[i]; }

 private:
  struct Rank {
    std::unique_ptr<uint8_t[]> mem;
    GroupView view;
    RankPendingStores pending;
    SpinGuard guard;
    std::vector<uint16_t> weight;
    std::vector<uint16_t> residual_out;
    std::vector<uint16_t> out;
  };

  static void RunRank(Rank& rank, Kernel kernel, uint32_t m, uint32_t n, uint32_t grid) {
    rank.guard.Arm(std::chrono::steady_clock::now() + std::chrono::seconds(10));
    rank.weight.assign(n, FloatToBf16(1.0f));
    ProtocolBreaks breaks;
    CallArgs a;
    a.m = m;
    a.n = n;
    a.residual = false;
    a.residual_in = rank.residual_out.data();
    a.weight = rank.weight.data();
    a.residual_out = rank.residual_out.data();
    a.out = rank.out.data();
    BlockPool pool(grid, &rank.pending);
    pool.Launch(grid, [&](uint32_t block, uint32_t g, PostedStores& posted) {
      BlockContext ctx{&rank.view, block, g, &rank.guard, &posted, &breaks};
      kernel(ctx, a);
    });
  }

  RankLayout layout_;
  std::vector<Rank> ranks_;
};

}  // namespace colltest::cpu
