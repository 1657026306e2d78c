// The barrier's memory orders under the cpu backend's posted-store model: a release arrive makes
// the stores before it visible to a peer that passes the barrier; a relaxed arrive does not.
#include "worker/backends/cpu/barrier.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "worker/heartbeat.h"

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

// The page a controller reads when it stops a rank that did not answer (common/worker_page.h),
// attached for one test: what it names is what the verdict blames.
class AttachedPage {
 public:
  AttachedPage() { worker::worker_page = &page_; }
  ~AttachedPage() { worker::worker_page = nullptr; }
  int Awaited() const {
    return static_cast<int>(page_.awaiting_plus_one.load(std::memory_order_relaxed)) - 1;
  }

 private:
  WorkerPage page_;
};

// Rank `from`'s block `block` arrives at rank 0's start barrier, as rank 1 would.
void ArriveAtRankZero(TwoRanks& g, uint32_t block, uint32_t from) {
  std::atomic_ref<uint32_t>(g.views[0].self().signal()->start[block][from])
      .store(1, std::memory_order_release);
}

// A rank whose wait timed out answers HANG naming the peer; until that answer arrives, a
// controller that stops the rank (host deadline, watchdog) reads the page, which must name the
// same peer. Before, the wait cleared the page as it gave up, and such a rank named nobody.
TEST(BarrierAwaitedPeer, AWaitThatTimedOutKeepsNamingItsPeerUntilTheNextCall) {
  AttachedPage page;
  TwoRanks g;
  ProtocolBreaks breaks;
  g.guard[0].Arm(std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
  PostedStores posted(&g.pending[0]);
  BlockContext ctx{&g.views[0], 0, 1, &g.guard[0], &posted, &breaks};
  EXPECT_FALSE(BlockBarrier(ctx, BarrierSlot::kStart, "one_stage start_sync"));
  EXPECT_EQ(g.guard[0].record().awaited_peer, 1);
  std::printf("page after the timed-out wait names rank %d (want 1)\n", page.Awaited());
  EXPECT_EQ(page.Awaited(), 1);
  g.guard[0].Arm(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(page.Awaited(), -1) << "a new call starts with a page that names nobody";
}

// Two blocks of rank 0 wait for rank 1, whose block 0 arrives first: rank 0's block 1 still waits
// for rank 1, so the page must still name it. Before, block 0 cleared the page as it left its
// wait, and a controller stopping the rank then read that it waited for nobody.
TEST(BarrierAwaitedPeer, ABlockDoneWaitingLeavesThePeerAnotherBlockStillWaitsFor) {
  AttachedPage page;
  TwoRanks g;
  ProtocolBreaks breaks;
  bool passed[2] = {false, false};
  auto block = [&](uint32_t b) {
    PostedStores posted(&g.pending[0]);
    BlockContext ctx{&g.views[0], b, 2, &g.guard[0], &posted, &breaks};
    passed[b] = BlockBarrier(ctx, BarrierSlot::kStart, "one_stage start_sync");
  };
  std::thread block0(block, 0u);
  std::thread block1(block, 1u);
  // Each block names rank 1 after 16 polls (microseconds); 300 ms is ample on a loaded machine.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(page.Awaited(), 1);
  ArriveAtRankZero(g, 0, 1);
  block0.join();
  EXPECT_TRUE(passed[0]);
  std::printf("page with block 1 still waiting names rank %d (want 1)\n", page.Awaited());
  EXPECT_EQ(page.Awaited(), 1);
  ArriveAtRankZero(g, 1, 1);
  block1.join();
  EXPECT_TRUE(passed[1]);
  EXPECT_EQ(page.Awaited(), -1) << "no block waits any more";
}

}  // namespace
}  // namespace colltest::cpu
