// The barrier's memory orders under the cpu backend's posted-store model: a release arrive makes
// the stores before it visible to a peer that passes the barrier; a relaxed arrive does not.
#include "worker/backends/cpu/barrier.h"

#include <cstring>
#include <memory>
#include <thread>

#include "gtest/gtest.h"

namespace colltest::cpu {
namespace {

struct TwoRanks {
  RankLayout layout = MakeRankLayout(1 << 16, 2);
  std::unique_ptr<uint8_t[]> mem[2];
  GroupView views[2];
  RankPendingStores pending[2];
  SpinGuard guard[2];

  TwoRanks() {
    for (int r = 0; r < 2; ++r) {
      mem[r].reset(new uint8_t[layout.total]());
    }
    for (int r = 0; r < 2; ++r) {
      views[r].rank = r;
      views[r].world = 2;
      for (int p = 0; p < 2; ++p) views[r].peers[p] = RankMemory{mem[p].get(), &layout};
      guard[r].Arm(std::chrono::steady_clock::now() + std::chrono::seconds(5));
    }
  }
};

// Rank 0 stores a value into rank 1's staging, then arrives; rank 1 passes the barrier and reads.
uint32_t ValueSeenAfterBarrier(bool relaxed) {
  TwoRanks g;
  ProtocolBreaks breaks;
  breaks.relaxed_barriers = relaxed;
  uint32_t seen = 0;
  std::thread rank1([&] {
    PostedStores posted(&g.pending[1]);
    BlockContext ctx{&g.views[1], 0, 1, &g.guard[1], &posted, &breaks};
    EXPECT_TRUE(BlockBarrier(ctx, BarrierSlot::kStart, "test"));
    seen = LoadPack(g.views[1].self().tmp()).w[0];
  });
  PostedStores posted(&g.pending[0]);
  BlockContext ctx{&g.views[0], 0, 1, &g.guard[0], &posted, &breaks};
  posted.Store(g.views[0].peers[1].tmp(), Pack{{42, 42, 42, 42}});
  EXPECT_TRUE(BlockBarrier(ctx, BarrierSlot::kStart, "test"));
  rank1.join();
  // Keep rank 0's store pending until rank 1 has looked: rank 0 must not drain by spinning first.
  return seen;
}

TEST(BarrierMemoryOrder, ReleaseMakesEarlierStoresVisible) {
  EXPECT_EQ(ValueSeenAfterBarrier(/*relaxed=*/false), 42u);
}

TEST(BarrierMemoryOrder, RelaxedArriveLetsTheFlagOvertakeTheData) {
  // Rank 0 may still drain while it spins for rank 1, so the stale read is possible, not certain;
  // over a few tries it must show up at least once.
  int stale = 0;
  for (int i = 0; i < 20; ++i) stale += ValueSeenAfterBarrier(/*relaxed=*/true) != 42u;
  EXPECT_GT(stale, 0);
}

TEST(BarrierMemoryOrder, EpochsOnlyGrowAndAPeerMayBeOneAhead) {
  TwoRanks g;
  ProtocolBreaks breaks;
  std::thread rank1([&] {
    PostedStores posted(&g.pending[1]);
    BlockContext ctx{&g.views[1], 0, 1, &g.guard[1], &posted, &breaks};
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(BlockBarrier(ctx, BarrierSlot::kStart, "test"));
  });
  PostedStores posted(&g.pending[0]);
  BlockContext ctx{&g.views[0], 0, 1, &g.guard[0], &posted, &breaks};
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(BlockBarrier(ctx, BarrierSlot::kStart, "test"));
  rank1.join();
  EXPECT_EQ(g.views[0].self().signal()->start_epoch[0], 1000u);
}

TEST(BarrierMemoryOrder, MissingPeerTimesOutNamingIt) {
  TwoRanks g;
  ProtocolBreaks breaks;
  g.guard[0].Arm(std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
  PostedStores posted(&g.pending[0]);
  BlockContext ctx{&g.views[0], 3, 4, &g.guard[0], &posted, &breaks};
  EXPECT_FALSE(BlockBarrier(ctx, BarrierSlot::kEnd, "lamport start_sync"));
  const HangRecord h = g.guard[0].record();
  EXPECT_EQ(h.awaited_peer, 1);
  EXPECT_EQ(h.block, 3);
  EXPECT_EQ(h.phase, "lamport start_sync");
}

}  // namespace
}  // namespace colltest::cpu
