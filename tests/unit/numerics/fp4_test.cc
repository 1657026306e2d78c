#include "worker/numerics/fp4.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/quant_epilogue.h"

namespace colltest {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kE2m1Values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

TEST(Fp4Rules, CodesDecodeToTheE2m1Values) {
  for (uint8_t c = 0; c < 8; ++c) {
    EXPECT_EQ(DecodeE2m1(c), kE2m1Values[c]) << int(c);
    EXPECT_EQ(DecodeE2m1(static_cast<uint8_t>(c | 8)), -kE2m1Values[c]) << int(c);
  }
  EXPECT_TRUE(std::signbit(DecodeE2m1(0x8)));
}

TEST(Fp4Rules, EveryCodeRoundTrips) {
  for (uint8_t c = 0; c < 16; ++c) EXPECT_EQ(EncodeE2m1(DecodeE2m1(c)), c) << int(c);
}

TEST(Fp4Rules, EveryTieRoundsToTheEvenCode) {
  // Midpoints 0.25 0.75 1.25 1.75 2.5 3.5 5 between codes c and c + 1: the even one wins.
  for (uint8_t c = 0; c < 7; ++c) {
    const float mid = (kE2m1Values[c] + kE2m1Values[c + 1]) / 2;
    const uint8_t even = (c % 2 == 0) ? c : static_cast<uint8_t>(c + 1);
    EXPECT_EQ(EncodeE2m1(mid), even) << mid;
    EXPECT_EQ(EncodeE2m1(-mid), even | 8) << -mid;
    EXPECT_EQ(EncodeE2m1(std::nextafter(mid, kInf)), c + 1) << mid;
    EXPECT_EQ(EncodeE2m1(std::nextafter(mid, 0.0f)), c) << mid;
  }
}

TEST(Fp4Rules, PastSixSaturates) {
  for (float x : {6.0f, std::nextafter(6.0f, kInf), 7.0f, 8.0f, 1e30f, kInf}) {
    EXPECT_EQ(EncodeE2m1(x), 0x7) << x;
    EXPECT_EQ(EncodeE2m1(-x), 0xf) << -x;
  }
  EXPECT_EQ(EncodeE2m1(std::numeric_limits<float>::quiet_NaN()), 0x7);  // no NaN code: +6
}

TEST(Fp4Rules, NegativeValuesRoundingToZeroKeepTheSign) {
  EXPECT_EQ(EncodeE2m1(-0.0f), 0x8);
  EXPECT_EQ(EncodeE2m1(-0.25f), 0x8);
  EXPECT_EQ(EncodeE2m1(-1e-30f), 0x8);
  EXPECT_EQ(EncodeE2m1(0.25f), 0x0);
}

TEST(Nvfp4Packing, TheEarlierElementIsTheLowNibble) {
  EXPECT_EQ(PackE2m1Pair(0x1, 0xa), 0xa1);
  const std::vector<uint8_t> codes = {0x1, 0x2, 0x3, 0xf, 0x7};
  const std::vector<uint8_t> packed = PackNvfp4(codes);
  ASSERT_EQ(packed.size(), 3u);
  EXPECT_EQ(packed[0], 0x21);
  EXPECT_EQ(packed[1], 0xf3);
  EXPECT_EQ(packed[2], 0x07);  // odd tail: high nibble 0
  EXPECT_EQ(UnpackNvfp4(packed, 5), codes);
  for (uint32_t i = 0; i < codes.size(); ++i) EXPECT_EQ(PackedE2m1At(packed.data(), i), codes[i]);
}

}  // namespace
}  // namespace colltest
