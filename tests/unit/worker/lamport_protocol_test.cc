// The sentinel rules on their own: bits, not floats; every word of a pack; producers never leave
// the sentinel behind.
#include "worker/backends/cpu/lamport_protocol.h"

#include <cstring>

#include "gtest/gtest.h"

namespace colltest::cpu {
namespace {

template <DType D>
Pack PackOf(std::initializer_list<float> values) {
  using S = typename Elem<D>::Storage;
  S lanes[kPackElems<D>] = {};
  size_t i = 0;
  for (float v : values) {
    if (i == kPackElems<D>) break;  // fp32 packs hold four lanes
    lanes[i++] = Elem<D>::FromFloat(v);
  }
  Pack p;
  std::memcpy(p.w, lanes, sizeof lanes);
  return p;
}

TEST(Sentinel, IsNegativeZeroInEveryLane) {
  EXPECT_EQ(SentinelWord<DType::kBf16>(), 0x80008000u);
  EXPECT_EQ(SentinelWord<DType::kFp16>(), 0x80008000u);
  EXPECT_EQ(SentinelWord<DType::kFp32>(), 0x80000000u);
  EXPECT_FALSE(Arrived<DType::kBf16>(SentinelPack<DType::kBf16>()));
  EXPECT_FALSE(Arrived<DType::kFp32>(SentinelPack<DType::kFp32>()));
}

TEST(Sentinel, ArrivalNeedsEveryWord) {
  for (int word = 0; word < 4; ++word) {
    Pack p = PackOf<DType::kBf16>({1, 2, 3, 4, 5, 6, 7, 8});
    EXPECT_TRUE(Arrived<DType::kBf16>(p));
    p.w[word] = SentinelWord<DType::kBf16>();  // one word still armed: not arrived
    EXPECT_FALSE(Arrived<DType::kBf16>(p)) << "word " << word;
  }
}

TEST(Sentinel, PositiveZeroAndNegativeSubnormalsAreDataNotSentinel) {
  // As floats, +0 == -0 and, with flush-to-zero, a negative subnormal == -0: only bits tell.
  const Pack zeros = PackOf<DType::kFp32>({0.0f, 0.0f, 0.0f, 0.0f});
  EXPECT_TRUE(Arrived<DType::kFp32>(zeros));
  EXPECT_FALSE(ArrivedFloatCompare<DType::kFp32>(zeros));
  Pack subnormals;
  for (uint32_t& w : subnormals.w) w = 0x80000001u;  // -1.4e-45
  EXPECT_TRUE(Arrived<DType::kFp32>(subnormals));
  const Pack bf16_zeros = PackOf<DType::kBf16>({0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_TRUE(Arrived<DType::kBf16>(bf16_zeros));
  EXPECT_FALSE(ArrivedFloatCompare<DType::kBf16>(bf16_zeros));
}

TEST(Sentinel, OneNegativeZeroLaneOfTwoIsNotTheSentinelWord) {
  const Pack p = PackOf<DType::kBf16>({-0.0f, 1, -0.0f, 2, 3, -0.0f, 4, 5});
  EXPECT_TRUE(Arrived<DType::kBf16>(p));
}

template <DType D>
void ExpectNoNegativeZeroLeft() {
  using S = typename Elem<D>::Storage;
  const Pack p = Canonicalize<D>(PackOf<D>({-0.0f, -0.0f, 1.0f, -0.0f, 0.0f, -2.0f, -0.0f, -0.0f}));
  S lanes[kPackElems<D>];
  std::memcpy(lanes, p.w, sizeof lanes);
  const float want[] = {0.0f, 0.0f, 1.0f, 0.0f, 0.0f, -2.0f, 0.0f, 0.0f};
  for (uint32_t i = 0; i < kPackElems<D>; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &lanes[i], sizeof(S));
    EXPECT_NE(bits, protocol::kNegZeroBits<D>) << "lane " << i;
    EXPECT_EQ(Elem<D>::ToFloat(lanes[i]), want[i]) << "lane " << i;
  }
  EXPECT_TRUE(Arrived<D>(p));
  EXPECT_FALSE(Arrived<D>(PackOf<D>({-0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f})));
}

TEST(Canonicalize, MapsNegativeZeroToPositiveZeroInEveryLane) {
  ExpectNoNegativeZeroLeft<DType::kBf16>();
  ExpectNoNegativeZeroLeft<DType::kFp16>();
  ExpectNoNegativeZeroLeft<DType::kFp32>();
}

}  // namespace
}  // namespace colltest::cpu
