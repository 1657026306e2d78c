// The protocol layer on its own (worker/protocol): the layout of a rank's registered memory under
// both backends' limits, the lamport_tb slot and rotation arithmetic, the reduce-scatter split and
// the Lamport word rules.
#include <cstddef>

#include "gtest/gtest.h"
#include "worker/protocol/lamport_word.h"
#include "worker/protocol/layout.h"
#include "worker/protocol/pack.h"
#include "worker/protocol/partition.h"
#include "worker/protocol/triple_buffer.h"

namespace colltest::protocol {
namespace {

template <class L>
class ProtocolLayout : public ::testing::Test {};
using BothLimits = ::testing::Types<CpuLimits, GpuLimits>;
TYPED_TEST_SUITE(ProtocolLayout, BothLimits);

TYPED_TEST(ProtocolLayout, RegionsFollowEachOtherAlignedAndDisjoint) {
  using L = TypeParam;
  for (uint32_t world : {1u, 2u, 8u}) {
    const Layout l = MakeLayout<L>(3 * L::kRegionAlign + 5, world);
    EXPECT_EQ(l.capacity, 4 * L::kRegionAlign);
    EXPECT_EQ(l.signal_offset, 0u);
    EXPECT_EQ(l.control_offset, sizeof(Signal<L>));
    EXPECT_EQ(l.control_offset % L::kAlign, 0u);
    EXPECT_GE(l.input_offset, l.control_offset + sizeof(RankControl<L>));
    for (size_t off : {l.input_offset, l.tmp_offset, l.lamport_offset, l.tb_offset}) {
      EXPECT_EQ(off % L::kRegionAlign, 0u);
    }
    EXPECT_EQ(l.tmp_offset, l.input_offset + l.capacity);
    EXPECT_EQ(l.lamport_offset, l.tmp_offset + l.capacity);
    EXPECT_EQ(l.tb_offset, l.lamport_offset + l.capacity);
    EXPECT_EQ(l.total, l.tb_offset + kTbBuffers * world * l.tb_capacity);
    EXPECT_EQ(l.world, world);
  }
}

TYPED_TEST(ProtocolLayout, SignalRowsHoldEveryBlockOnTheirOwnLines) {
  using L = TypeParam;
  EXPECT_EQ(alignof(Signal<L>), L::kAlign);
  EXPECT_EQ(alignof(RankControl<L>), L::kAlign);
  EXPECT_EQ(offsetof(Signal<L>, end) % L::kAlign, 0u);
  EXPECT_GE(offsetof(Signal<L>, end), sizeof(uint32_t) * L::kMaxBlocks * kMaxRanks);
  EXPECT_EQ(offsetof(Signal<L>, start_epoch) % L::kAlign, 0u);
  // The GPU clears the hang claim and the abort flag with one memset of two words.
  EXPECT_EQ(offsetof(RankControl<L>, aborted),
            offsetof(RankControl<L>, hang_claimed) + sizeof(uint32_t));
}

TYPED_TEST(ProtocolLayout, TripleBufferCapacityIsCapped) {
  using L = TypeParam;
  EXPECT_EQ(MakeLayout<L>(1, 2).tb_capacity, L::kRegionAlign);
  const Layout big = MakeLayout<L>(2 * L::kTbCapacityLimit, 2);
  EXPECT_EQ(big.capacity, 2 * L::kTbCapacityLimit);
  EXPECT_EQ(big.tb_capacity, L::kTbCapacityLimit);
}

TYPED_TEST(ProtocolLayout, TbSlotsTileTheTripleBufferBufferMajor) {
  using L = TypeParam;
  const uint32_t world = 4;
  const Layout l = MakeLayout<L>(L::kRegionAlign, world);
  size_t expect = l.tb_offset;
  for (uint32_t b = 0; b < kTbBuffers; ++b) {
    for (uint32_t src = 0; src < world; ++src) {
      EXPECT_EQ(l.TbSlotOffset(b, src), expect) << "buffer " << b << " src " << src;
      expect += l.tb_capacity;
    }
  }
  EXPECT_EQ(expect, l.total);
}

TEST(ProtocolLimits, BackendsKeepTheirSizes) {
  EXPECT_EQ(CpuLimits::kMaxBlocks, 80u);
  EXPECT_EQ(CpuLimits::kAlign, 64u);
  EXPECT_EQ(GpuLimits::kMaxBlocks, 1024u);
  EXPECT_EQ(GpuLimits::kAlign, 128u);
  EXPECT_EQ(kPackElems<DType::kBf16>, 8u);
  EXPECT_EQ(kPackElems<DType::kFp16>, 8u);
  EXPECT_EQ(kPackElems<DType::kFp32>, 4u);
}

TEST(TripleBuffer, RotatesAndClearsThePreviousCallsBuffer) {
  for (uint64_t call = 0; call < 7; ++call) {
    EXPECT_EQ(TbBuffer(call), call % 3);
    EXPECT_EQ(TbClearedBuffer(call), (call + 2) % 3);
    // The cleared buffer is the next call's for a two-buffer rotation: why three are needed.
    EXPECT_EQ(TbClearedBuffer(call, 2), TbBuffer(call + 1, 2));
    EXPECT_NE(TbClearedBuffer(call), TbBuffer(call + 1));
  }
  EXPECT_EQ(TbClearedBuffer(0), 2u);
}

TEST(TripleBuffer, OnlyPeersAreStaged) {
  EXPECT_FALSE(TbStaged(2, 2));
  EXPECT_TRUE(TbStaged(1, 2));
  EXPECT_TRUE(TbStaged(2, 1));
}

TEST(Partition, PartsTileThePacksAndOwnerOfInvertsThem) {
  for (uint32_t world : {1u, 2u, 3u, 4u, 8u}) {
    for (size_t packs : {size_t{1}, size_t{7}, size_t{8}, size_t{1000}, size_t{4097}}) {
      size_t next = 0;
      for (uint32_t r = 0; r < world; ++r) {
        const Part p = PartOf(packs, world, r);
        EXPECT_EQ(p.begin, next);
        for (size_t k = p.begin; k < p.end; ++k) {
          ASSERT_EQ(OwnerOf(k, packs, world), r) << "pack " << k << " of " << packs;
        }
        next = p.end;
      }
      EXPECT_EQ(next, packs);
    }
  }
}

TEST(LamportWord, SentinelCanonicalAndArrivalOnWords) {
  EXPECT_EQ(SentinelWord<DType::kBf16>(), 0x80008000u);
  EXPECT_EQ(SentinelWord<DType::kFp32>(), 0x80000000u);
  EXPECT_EQ(CanonicalWord<DType::kBf16>(0x80008000u), 0u);
  EXPECT_EQ(CanonicalWord<DType::kFp16>(0x3c008000u), 0x3c000000u);
  EXPECT_EQ(CanonicalWord<DType::kFp16>(0x80003c00u), 0x00003c00u);
  EXPECT_EQ(CanonicalWord<DType::kFp32>(0x80000000u), 0u);
  EXPECT_EQ(CanonicalWord<DType::kFp32>(0x80000001u), 0x80000001u);  // a subnormal is data
  EXPECT_FALSE(WordArrived<DType::kBf16>(0x80008000u));
  EXPECT_TRUE(WordArrived<DType::kBf16>(0x00008000u));  // one -0.0 lane of two is data
  EXPECT_TRUE(WordArrived<DType::kFp32>(0u));
}

}  // namespace
}  // namespace colltest::protocol
