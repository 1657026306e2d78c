// lamport_tb's own-contribution rule (worker/protocol/triple_buffer.h), at the kernel level: a rank
// pushes its input to its peers only and sums its own input directly, so its own triple-buffer
// slot stays armed on every call, and every rank sums the same canonical bits. The GPU kernel
// (LamportTbKernel) follows the same rule; a cpu that staged its own contribution would pass the
// end-to-end tests but no longer be the specification of the GPU kernel.
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "worker/backends/cpu/block_pool.h"
#include "worker/backends/cpu/kernels.h"
#include "worker/backends/cpu/lamport_protocol.h"
#include "worker/protocol/triple_buffer.h"

namespace colltest::cpu {
namespace {

constexpr DType kT = DType::kBf16;
constexpr uint32_t kWorld = 3, kGrid = 2, kM = 4, kN = 32;
constexpr size_t kCount = size_t{kM} * kN;

// Small integers, so that sums are exact; every fourth element is -0.0 on every rank.
float InputAt(uint32_t rank, uint64_t call, size_t i) {
  return i % 4 == 0 ? -0.0f : static_cast<float>((rank + call + i) % 7) - 3.0f;
}

struct Rank {
  std::unique_ptr<uint8_t[]> mem;
  GroupView view;
  RankPendingStores pending;
  SpinGuard guard;
  std::vector<uint16_t> weight = std::vector<uint16_t>(kN, FloatToBf16(1.0f));
  std::vector<uint16_t> residual_out = std::vector<uint16_t>(kCount);
  std::vector<uint16_t> out = std::vector<uint16_t>(kCount);
};

class LamportTbOwnSlot : public ::testing::Test {
 protected:
  LamportTbOwnSlot() {
    for (uint32_t r = 0; r < kWorld; ++r) {
      ranks_[r].mem.reset(new uint8_t[layout_.total]());
      for (uint32_t b = 0; b < protocol::kTbBuffers; ++b) {
        for (uint32_t src = 0; src < kWorld; ++src) {
          ArmStaging(kT, ranks_[r].mem.get() + layout_.TbSlotOffset(b, src), layout_.tb_capacity);
        }
      }
    }
    for (uint32_t r = 0; r < kWorld; ++r) {
      ranks_[r].view.rank = r;
      ranks_[r].view.world = kWorld;
      for (uint32_t p = 0; p < kWorld; ++p) {
        ranks_[r].view.peers[p] = RankMemory{ranks_[p].mem.get(), &layout_};
      }
    }
  }

  // One call on every rank at once, each rank's blocks on its own pool; then every store lands.
  void RunCall(uint64_t call) {
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < kWorld; ++r) {
      auto* in = reinterpret_cast<uint16_t*>(ranks_[r].view.self().input());
      for (size_t i = 0; i < kCount; ++i) in[i] = FloatToBf16(InputAt(r, call, i));
      threads.emplace_back([this, r] { RunRank(ranks_[r]); });
    }
    for (auto& t : threads) t.join();
    for (Rank& rank : ranks_) rank.pending.Drain();
  }

  bool OwnSlotsArmed(uint32_t r) const {
    const RankMemory& self = ranks_[r].view.self();
    for (uint32_t b = 0; b < protocol::kTbBuffers; ++b) {
      for (size_t k = 0; k < kCount * 2 / 16; ++k) {
        if (Arrived<kT>(LoadPack(self.tb_slot(b, r) + k * 16))) return false;
      }
    }
    return true;
  }

  RankLayout layout_ = MakeRankLayout(1 << 16, kWorld);
  Rank ranks_[kWorld];

 private:
  void RunRank(Rank& rank) {
    rank.guard.Arm(std::chrono::steady_clock::now() + std::chrono::seconds(10));
    ProtocolBreaks breaks;
    CallArgs a;
    a.m = kM;
    a.n = kN;
    a.residual = false;  // residual_out is then the all-reduce sum itself
    a.residual_in = rank.residual_out.data();
    a.weight = rank.weight.data();
    a.residual_out = rank.residual_out.data();
    a.out = rank.out.data();
    BlockPool pool(kGrid, &rank.pending);
    pool.Launch(kGrid, [&](uint32_t block, uint32_t grid, PostedStores& posted) {
      BlockContext ctx{&rank.view, block, grid, &rank.guard, &posted, &breaks};
      LamportTbBlock<kT>(ctx, a);
    });
  }
};

TEST_F(LamportTbOwnSlot, OwnSlotStaysArmedAndSumsAreExact) {
  for (uint64_t call = 0; call < 5; ++call) {
    RunCall(call);
    for (uint32_t r = 0; r < kWorld; ++r) {
      EXPECT_EQ(ranks_[r].guard.record().block, -1) << "rank " << r << " hung, call " << call;
      EXPECT_TRUE(OwnSlotsArmed(r)) << "rank " << r << " staged its own input, call " << call;
      // Its peers' slots of this call's buffer hold what they pushed.
      const uint32_t buf = protocol::TbBuffer(call);
      const uint32_t peer = (r + 1) % kWorld;
      EXPECT_TRUE(Arrived<kT>(LoadPack(ranks_[r].view.self().tb_slot(buf, peer))));
      for (size_t i = 0; i < kCount; ++i) {
        float want = 0.0f;  // canonical -0.0 from every rank sums to +0.0
        for (uint32_t src = 0; src < kWorld; ++src) want += InputAt(src, call, i) + 0.0f;
        ASSERT_EQ(ranks_[r].residual_out[i], FloatToBf16(want))
            << "rank " << r << " call " << call << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace colltest::cpu
