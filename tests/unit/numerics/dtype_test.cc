#include "worker/numerics/dtype.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace colltest {
namespace {

constexpr uint16_t kFp16Inf = 0x7c00;

bool IsFp16Nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

// Independent bf16 rounding: pick the nearer of the two bf16 neighbours in double arithmetic,
// ties to the even pattern. Only for finite inputs.
uint16_t NearestBf16(float f) {
  const uint32_t u = FloatBits(f);
  const uint16_t down = static_cast<uint16_t>(u >> 16);
  const uint16_t up = static_cast<uint16_t>(down + 1);  // next magnitude, same sign
  if ((u & 0xffff) == 0) return down;
  const double d_down = std::fabs(static_cast<double>(f) - Bf16ToFloat(down));
  const double d_up = std::fabs(static_cast<double>(f) - Bf16ToFloat(up));
  if (d_down < d_up) return down;
  if (d_up < d_down) return up;
  return (down & 1) ? up : down;
}

TEST(DTypeTest, NamesAndSizes) {
  EXPECT_STREQ(DTypeName(DType::kBf16), "bf16");
  EXPECT_STREQ(DTypeName(DType::kFp16), "fp16");
  EXPECT_STREQ(DTypeName(DType::kFp32), "fp32");
  EXPECT_EQ(PackElems(DType::kBf16), 8u);
  EXPECT_EQ(PackElems(DType::kFp16), 8u);
  EXPECT_EQ(PackElems(DType::kFp32), 4u);
}

TEST(DTypeTest, Bf16TiesToEven) {
  // 1 + 2^-8 lies halfway between 1 (even) and 1 + 2^-7 (odd).
  EXPECT_EQ(FloatToBf16(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(FloatToBf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  // Just past halfway goes up.
  EXPECT_EQ(FloatToBf16(std::nextafter(1.0f + 0x1p-8f, 2.0f)), 0x3f81);
  EXPECT_EQ(FloatToBf16(std::nextafter(1.0f + 0x1p-8f, 0.0f)), 0x3f80);
  EXPECT_EQ(FloatToBf16(-(1.0f + 3 * 0x1p-8f)), 0xbf82);
}

TEST(DTypeTest, Bf16SpecialValues) {
  EXPECT_EQ(FloatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToBf16(0.0f), 0x0000);
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(FloatToBf16(-std::numeric_limits<float>::infinity()), 0xff80);
  // FLT_MAX is past the midpoint between the largest bf16 and 2^128: overflows to Inf.
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7f80);
  const uint16_t nan = FloatToBf16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(Bf16ToFloat(nan)));
  // A NaN whose payload sits only in the low 16 bits must not truncate to Inf.
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(BitsToFloat(0x7f800001u)))));
  // Subnormals: 0x8000 below the first bf16 subnormal is a tie to 0; 0x18000 a tie to 2.
  EXPECT_EQ(FloatToBf16(BitsToFloat(0x00008000u)), 0x0000);
  EXPECT_EQ(FloatToBf16(BitsToFloat(0x00018000u)), 0x0002);
  EXPECT_EQ(FloatToBf16(BitsToFloat(0x00008001u)), 0x0001);
  EXPECT_EQ(FloatToBf16(BitsToFloat(0x80008001u)), 0x8001);
}

TEST(DTypeTest, Bf16MatchesNearestNeighbour) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    float f = BitsToFloat(rng());
    if (!std::isfinite(f) || std::fabs(f) >= 3.38e38f) continue;  // neighbour search overflows
    ASSERT_EQ(FloatToBf16(f), NearestBf16(f)) << "bits 0x" << std::hex << FloatBits(f);
  }
}

TEST(DTypeTest, Fp16KnownValues) {
  EXPECT_EQ(FloatToFp16(1.0f), 0x3c00);
  EXPECT_EQ(FloatToFp16(-2.0f), 0xc000);
  EXPECT_EQ(FloatToFp16(0.5f), 0x3800);
  EXPECT_EQ(FloatToFp16(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToFp16(0x1p-14f), 0x0400);  // smallest normal
  EXPECT_EQ(Fp16ToFloat(0x3555), 0x1.554p-2f);
  EXPECT_EQ(Fp16ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(Fp16ToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(Fp16ToFloat(0x03ff), 1023 * 0x1p-24f);
}

TEST(DTypeTest, Fp16TiesToEven) {
  EXPECT_EQ(FloatToFp16(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(FloatToFp16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(FloatToFp16(std::nextafter(1.0f + 0x1p-11f, 2.0f)), 0x3c01);
  EXPECT_EQ(FloatToFp16(-(1.0f + 3 * 0x1p-11f)), 0xbc02);
  // Rounding up through the top of the mantissa carries into the exponent.
  EXPECT_EQ(FloatToFp16(2.0f - 0x1p-12f), 0x4000);
}

TEST(DTypeTest, Fp16Subnormals) {
  EXPECT_EQ(FloatToFp16(0x1p-24f), 0x0001);
  EXPECT_EQ(FloatToFp16(0x1p-25f), 0x0000);  // tie between 0 and the first subnormal
  EXPECT_EQ(FloatToFp16(-0x1p-25f), 0x8000);
  EXPECT_EQ(FloatToFp16(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(FloatToFp16(3 * 0x1p-25f), 0x0002);  // tie between 1 and 2
  EXPECT_EQ(FloatToFp16(5 * 0x1p-25f), 0x0002);  // tie between 2 and 3
  EXPECT_EQ(FloatToFp16(0x1p-30f), 0x0000);
  EXPECT_EQ(FloatToFp16(std::numeric_limits<float>::denorm_min()), 0x0000);
  // Halfway between the largest subnormal (odd) and the smallest normal: rounds to the normal.
  EXPECT_EQ(FloatToFp16(1023.5f * 0x1p-24f), 0x0400);
  EXPECT_EQ(FloatToFp16(1022.5f * 0x1p-24f), 0x03fe);
  EXPECT_EQ(FloatToFp16(-1023.0f * 0x1p-24f), 0x83ff);
}

TEST(DTypeTest, Fp16OverflowAndSpecials) {
  EXPECT_EQ(FloatToFp16(65519.0f), 0x7bff);
  EXPECT_EQ(FloatToFp16(65520.0f), kFp16Inf);  // tie with an odd max: rounds to Inf
  EXPECT_EQ(FloatToFp16(1e6f), kFp16Inf);
  EXPECT_EQ(FloatToFp16(-1e30f), 0xfc00);
  EXPECT_EQ(FloatToFp16(std::numeric_limits<float>::infinity()), kFp16Inf);
  EXPECT_EQ(FloatToFp16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(FloatToFp16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToFp16(0.0f), 0x0000);
  EXPECT_TRUE(IsFp16Nan(FloatToFp16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(IsFp16Nan(FloatToFp16(BitsToFloat(0x7f800001u))));
  EXPECT_TRUE(IsFp16Nan(FloatToFp16(BitsToFloat(0xffc00000u))));
  EXPECT_EQ(FloatToFp16(BitsToFloat(0xffc00000u)) & 0x8000, 0x8000);
  EXPECT_TRUE(std::isnan(Fp16ToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(Fp16ToFloat(0xfc01)));
  EXPECT_EQ(Fp16ToFloat(kFp16Inf), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Fp16ToFloat(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(FloatBits(Fp16ToFloat(0x8000)), 0x80000000u);
}

TEST(DTypeTest, Fp16DecodeAndRoundTripAllPatterns) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t b = static_cast<uint16_t>(h);
    const float f = Fp16ToFloat(b);
    if (IsFp16Nan(b)) {
      EXPECT_TRUE(std::isnan(f));
      EXPECT_TRUE(IsFp16Nan(FloatToFp16(f)));
      continue;
    }
    const int exp = (h >> 10) & 0x1f;
    const int mant = h & 0x3ff;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    const double want = exp == 0x1f ? sign * HUGE_VAL
                        : exp == 0  ? sign * std::ldexp(mant, -24)
                                    : sign * std::ldexp(1024 + mant, exp - 25);
    ASSERT_EQ(static_cast<double>(f), want) << "h=0x" << std::hex << h;
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0);
    ASSERT_EQ(FloatToFp16(f), b) << "h=0x" << std::hex << h;
  }
}

#if defined(__FLT16_MAX__)
// The compiler's own conversion is an independent round-to-nearest-even implementation.
uint16_t CompilerFp16(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t b;
  std::memcpy(&b, &h, sizeof b);
  return b;
}

TEST(DTypeTest, Fp16MatchesCompilerOnEveryMidpoint) {
  // Each midpoint between neighbouring fp16 values and the floats either side of it.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float lo = Fp16ToFloat(static_cast<uint16_t>(h));
    const float hi = h == 0x7bff ? 65536.0f : Fp16ToFloat(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      ASSERT_EQ(FloatToFp16(f), CompilerFp16(f)) << f;
      ASSERT_EQ(FloatToFp16(-f), CompilerFp16(-f)) << -f;
    }
  }
}

TEST(DTypeTest, Fp16MatchesCompilerOnRandomFloats) {
  std::mt19937 rng(11);
  for (int i = 0; i < 300000; ++i) {
    // Concentrate on the exponents fp16 can represent or just miss.
    uint32_t bits = rng();
    if (i % 2) bits = (bits & 0x807fffffu) | ((96u + (bits >> 23) % 48u) << 23);
    const float f = BitsToFloat(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToFp16(f), CompilerFp16(f)) << "bits 0x" << std::hex << bits;
  }
}
#endif

TEST(DTypeTest, RoundToAndStoredBits) {
  EXPECT_EQ(RoundTo(DType::kFp32, 1.0f + 0x1p-20f), 1.0f + 0x1p-20f);
  EXPECT_EQ(RoundTo(DType::kBf16, 1.0f + 0x1p-20f), 1.0f);
  EXPECT_EQ(RoundTo(DType::kFp16, 1.0f + 0x1p-20f), 1.0f);
  EXPECT_EQ(RoundTo(DType::kFp16, 1.0f + 0x1p-10f), 1.0f + 0x1p-10f);
  EXPECT_EQ(RoundTo(DType::kBf16, 1.0f + 0x1p-10f), 1.0f);
  EXPECT_EQ(RoundTo(DType::kFp16, 1e5f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(RoundTo(DType::kBf16, 1e5f), 99840.0f);
  EXPECT_TRUE(std::signbit(RoundTo(DType::kBf16, -0.0f)));
  EXPECT_TRUE(std::signbit(RoundTo(DType::kFp16, -0.0f)));
  EXPECT_EQ(StoredBits(DType::kBf16, -0.0f), 0x8000u);
  EXPECT_EQ(StoredBits(DType::kFp16, -0.0f), 0x8000u);
  EXPECT_EQ(StoredBits(DType::kFp32, -0.0f), 0x80000000u);
  EXPECT_EQ(StoredBits(DType::kBf16, 1.0f), 0x3f80u);
  EXPECT_EQ(StoredBits(DType::kFp16, 1.0f), 0x3c00u);
  EXPECT_EQ(StoredBits(DType::kFp32, 1.0f), 0x3f800000u);
}

TEST(DTypeTest, UlpDistance) {
  EXPECT_EQ(UlpDistance(DType::kBf16, 1.0f, 1.0f), 0u);
  EXPECT_EQ(UlpDistance(DType::kBf16, 1.0f, 1.0078125f), 1u);
  EXPECT_EQ(UlpDistance(DType::kBf16, 1.0078125f, 1.0f), 1u);
  EXPECT_EQ(UlpDistance(DType::kFp16, 1.0f, 1.0f + 0x1p-10f), 1u);
  EXPECT_EQ(UlpDistance(DType::kFp16, 1.0f, 1.0f - 0x1p-11f), 1u);  // across a binade
  EXPECT_EQ(UlpDistance(DType::kFp32, 1.0f, std::nextafter(1.0f, 2.0f)), 1u);
  EXPECT_EQ(UlpDistance(DType::kFp32, 1.0f, 1.0f + 64 * 0x1p-23f), 64u);
  // Zero is one point: +0 and -0 are 0 apart and each is 1 from the smallest subnormal.
  for (DType t : {DType::kBf16, DType::kFp16, DType::kFp32}) {
    SCOPED_TRACE(DTypeName(t));
    const float tiny = t == DType::kFp16 ? 0x1p-24f : std::numeric_limits<float>::denorm_min();
    const float tiny_t = t == DType::kBf16 ? Bf16ToFloat(0x0001) : tiny;
    EXPECT_EQ(UlpDistance(t, 0.0f, -0.0f), 0u);
    EXPECT_EQ(UlpDistance(t, -0.0f, tiny_t), 1u);
    EXPECT_EQ(UlpDistance(t, 0.0f, -tiny_t), 1u);
    EXPECT_EQ(UlpDistance(t, -tiny_t, tiny_t), 2u);
    EXPECT_EQ(UlpDistance(t, std::numeric_limits<float>::quiet_NaN(), 1.0f), UINT64_MAX);
    EXPECT_EQ(UlpDistance(t, 1.0f, std::numeric_limits<float>::quiet_NaN()), UINT64_MAX);
  }
  // Across zero the distance is the sum of both magnitudes' indices.
  EXPECT_EQ(UlpDistance(DType::kBf16, -1.0f, 1.0f), 2u * 0x3f80u);
  EXPECT_EQ(UlpDistance(DType::kFp16, -1.0f, 1.0f), 2u * 0x3c00u);
  EXPECT_EQ(UlpDistance(DType::kFp32, -1.0f, 1.0f), 2ull * 0x3f800000u);
  EXPECT_EQ(UlpDistance(DType::kFp16, 65504.0f, std::numeric_limits<float>::infinity()), 1u);
}

// StoreRow is StoredBits over a row: the same bytes for every element, each type, odd lengths.
TEST(DTypeTest, StoreRowStoresWhatStoredBitsGives) {
  const std::vector<float> values = {0.0f,     -0.0f, 1.0f,  -2.5f, 3.14159f,
                                     65504.0f, 1e-7f, -7.0f, 0.1f};
  for (DType t : {DType::kBf16, DType::kFp16, DType::kFp32}) {
    SCOPED_TRACE(DTypeName(t));
    std::vector<uint8_t> row(values.size() * ElemBytes(t));
    StoreRow(t, values.data(), values.size(), row.data());
    for (size_t i = 0; i < values.size(); ++i) {
      uint32_t got = 0;
      std::memcpy(&got, row.data() + i * ElemBytes(t), ElemBytes(t));
      EXPECT_EQ(got, StoredBits(t, values[i])) << i;
    }
  }
}

}  // namespace
}  // namespace colltest
