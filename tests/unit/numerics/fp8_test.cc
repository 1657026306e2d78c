#include "worker/numerics/fp8.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "worker/numerics/dtype.h"

namespace colltest {
namespace {

constexpr Fp8Format kFormats[] = {Fp8Format::kE4m3fn, Fp8Format::kE4m3fnuz};
constexpr float kInf = std::numeric_limits<float>::infinity();

// Every non-NaN code, in increasing value, -0 left out (it is the same point as +0).
std::vector<uint8_t> CodesInValueOrder(Fp8Format f) {
  std::vector<uint8_t> codes;
  for (int mag = Fp8MaxMagnitude(f); mag >= 1; --mag)
    codes.push_back(static_cast<uint8_t>(0x80 | mag));
  for (int mag = 0; mag <= Fp8MaxMagnitude(f); ++mag) codes.push_back(static_cast<uint8_t>(mag));
  return codes;
}

// Independent encoder: the nearest code by search over all decoded values, ties to the even
// code, saturating. Finite inputs only.
uint8_t NearestBySearch(Fp8Format f, float x) {
  // Far past the largest finite the distances to the top codes are equal in double: saturate.
  if (std::fabs(x) >= Fp8MaxFinite(f)) {
    return static_cast<uint8_t>((std::signbit(x) ? 0x80 : 0) | Fp8MaxMagnitude(f));
  }
  const std::vector<uint8_t> codes = CodesInValueOrder(f);
  uint8_t best = codes.front();
  double best_dist = std::numeric_limits<double>::infinity();
  for (uint8_t c : codes) {
    const double dist = std::fabs(static_cast<double>(x) - DecodeFp8(f, c));
    if (dist < best_dist || (dist == best_dist && (c & 1) == 0)) {
      best = c;
      best_dist = dist;
    }
  }
  // The search meets +0 only; a negative value that rounds to zero keeps its sign in fn.
  if (best == 0 && std::signbit(x) && f == Fp8Format::kE4m3fn) return 0x80;
  return best;
}

TEST(Fp8Rules, KnownCodesDecodeToTheFormatsValues) {
  EXPECT_EQ(DecodeFp8(Fp8Format::kE4m3fn, 0x7e), 448.0f);
  EXPECT_EQ(DecodeFp8(Fp8Format::kE4m3fn, 0x08), 0x1p-6f);  // smallest normal
  EXPECT_EQ(DecodeFp8(Fp8Format::kE4m3fn, 0x01), 0x1p-9f);  // smallest subnormal
  EXPECT_EQ(DecodeFp8(Fp8Format::kE4m3fn, 0x38), 1.0f);
  EXPECT_EQ(DecodeFp8(Fp8Format::kE4m3fnuz, 0x7f), 240.0f);
  EXPECT_EQ(DecodeFp8(Fp8Format::kE4m3fnuz, 0x08), 0x1p-7f);
  EXPECT_EQ(DecodeFp8(Fp8Format::kE4m3fnuz, 0x01), 0x1p-10f);
  EXPECT_EQ(DecodeFp8(Fp8Format::kE4m3fnuz, 0x40), 1.0f);
  EXPECT_EQ(DecodeFp8(Fp8Format::kE4m3fnuz, 0xc0), -1.0f);
}

TEST(Fp8Rules, NanCodesAreTheFormatsOwn) {
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    EXPECT_EQ(Fp8IsNan(Fp8Format::kE4m3fn, code), c == 0x7f || c == 0xff) << c;
    EXPECT_EQ(Fp8IsNan(Fp8Format::kE4m3fnuz, code), c == 0x80) << c;
    EXPECT_EQ(std::isnan(DecodeFp8(Fp8Format::kE4m3fn, code)), Fp8IsNan(Fp8Format::kE4m3fn, code));
    EXPECT_EQ(std::isnan(DecodeFp8(Fp8Format::kE4m3fnuz, code)),
              Fp8IsNan(Fp8Format::kE4m3fnuz, code));
  }
}

TEST(Fp8Rules, EveryCodeRoundTrips) {
  for (Fp8Format f : kFormats) {
    for (int c = 0; c < 256; ++c) {
      const uint8_t code = static_cast<uint8_t>(c);
      if (Fp8IsNan(f, code)) continue;
      EXPECT_EQ(EncodeFp8(f, DecodeFp8(f, code)), code) << Fp8FormatName(f) << " " << c;
    }
  }
}

TEST(Fp8Rules, CodesOfOneSignGrowWithTheValue) {
  for (Fp8Format f : kFormats) {
    const std::vector<uint8_t> codes = CodesInValueOrder(f);
    for (size_t i = 1; i < codes.size(); ++i) {
      EXPECT_LT(DecodeFp8(f, codes[i - 1]), DecodeFp8(f, codes[i])) << Fp8FormatName(f);
      EXPECT_EQ(Fp8OrderedIndex(codes[i]) - Fp8OrderedIndex(codes[i - 1]), 1);
    }
  }
}

TEST(Fp8Rules, EveryTieRoundsToTheEvenCode) {
  for (Fp8Format f : kFormats) {
    const std::vector<uint8_t> codes = CodesInValueOrder(f);
    for (size_t i = 1; i < codes.size(); ++i) {
      const float lo = DecodeFp8(f, codes[i - 1]);
      const float hi = DecodeFp8(f, codes[i]);
      const float mid = (lo + hi) / 2;  // exact: 5 significant bits at most
      ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(lo) + hi) / 2);
      const uint8_t even = (codes[i - 1] & 1) == 0 ? codes[i - 1] : codes[i];
      // The midpoint between -min_subnormal and +0 is -0 side: fn keeps the sign of zero.
      const uint8_t want =
          (even == 0 && std::signbit(mid) && f == Fp8Format::kE4m3fn) ? 0x80 : even;
      EXPECT_EQ(EncodeFp8(f, mid), want) << Fp8FormatName(f) << " tie " << mid;
      // Off the tie by one float step each way: the nearer code (compared by position, as the
      // step above the -min_subnormal / 0 tie is -0 in fn).
      const uint8_t above = EncodeFp8(f, std::nextafter(mid, kInf));
      const uint8_t below = EncodeFp8(f, std::nextafter(mid, -kInf));
      EXPECT_EQ(Fp8OrderedIndex(above), Fp8OrderedIndex(codes[i])) << mid;
      EXPECT_EQ(Fp8OrderedIndex(below), Fp8OrderedIndex(codes[i - 1])) << mid;
    }
  }
}

TEST(Fp8Rules, PastTheLargestFiniteSaturates) {
  for (Fp8Format f : kFormats) {
    const float max = Fp8MaxFinite(f);
    const uint8_t pos = Fp8MaxMagnitude(f);
    const uint8_t neg = static_cast<uint8_t>(0x80 | pos);
    for (float x : {max, std::nextafter(max, kInf), max + 8, max * 1.0625f, max * 2, 1e30f,
                    std::numeric_limits<float>::max(), kInf}) {
      EXPECT_EQ(EncodeFp8(f, x), pos) << Fp8FormatName(f) << " " << x;
      EXPECT_EQ(EncodeFp8(f, -x), neg) << Fp8FormatName(f) << " " << -x;
    }
  }
  // Just below the largest finite rounds to it or its neighbour, never past it.
  EXPECT_EQ(EncodeFp8(Fp8Format::kE4m3fn, 447.0f), 0x7e);
  EXPECT_EQ(EncodeFp8(Fp8Format::kE4m3fn, 415.0f), 0x7d);  // below the 416..448 midpoint 432
  EXPECT_EQ(EncodeFp8(Fp8Format::kE4m3fnuz, 239.0f), 0x7f);
}

TEST(Fp8Rules, NanEncodesToTheNanCode) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(EncodeFp8(Fp8Format::kE4m3fn, nan), 0x7f);
  EXPECT_EQ(EncodeFp8(Fp8Format::kE4m3fn, -nan), 0x7f);
  EXPECT_EQ(EncodeFp8(Fp8Format::kE4m3fnuz, nan), 0x80);
  EXPECT_EQ(EncodeFp8(Fp8Format::kE4m3fnuz, -nan), 0x80);
  EXPECT_EQ(EncodeFp8(Fp8Format::kE4m3fn, BitsToFloat(0x7f800001u)), 0x7f);  // signalling
}

TEST(Fp8Rules, FnuzHasNoNegativeZero) {
  for (float x :
       {-0.0f, -0x1p-12f, -0x1p-11f, -1e-30f, -std::numeric_limits<float>::denorm_min()}) {
    EXPECT_EQ(EncodeFp8(Fp8Format::kE4m3fnuz, x), 0x00) << x;
    EXPECT_EQ(EncodeFp8(Fp8Format::kE4m3fn, x), 0x80) << x;  // fn keeps the sign of zero
  }
  EXPECT_EQ(EncodeFp8(Fp8Format::kE4m3fnuz, 0.0f), 0x00);
  // Just past half the smallest fnuz subnormal rounds away from zero.
  EXPECT_EQ(EncodeFp8(Fp8Format::kE4m3fnuz, -std::nextafter(0x1p-11f, 1.0f)), 0x81);
}

TEST(Fp8Rules, EverySixteenBitInputMatchesTheNearestSearch) {
  // All bf16 and fp16 values: the inputs a kernel's norm output holds before scaling.
  for (Fp8Format f : kFormats) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
      for (float x :
           {Bf16ToFloat(static_cast<uint16_t>(h)), Fp16ToFloat(static_cast<uint16_t>(h))}) {
        if (!std::isfinite(x)) continue;
        ASSERT_EQ(EncodeFp8(f, x), NearestBySearch(f, x)) << Fp8FormatName(f) << " " << x;
      }
    }
  }
}

TEST(Fp8Rules, RandomFloatsMatchTheNearestSearch) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> exponent(-14.0f, 10.0f);
  for (Fp8Format f : kFormats) {
    for (int k = 0; k < 20000; ++k) {
      const float x = (k % 2 ? -1.0f : 1.0f) * std::exp2(exponent(rng));
      ASSERT_EQ(EncodeFp8(f, x), NearestBySearch(f, x)) << Fp8FormatName(f) << " " << x;
    }
  }
}

}  // namespace
}  // namespace colltest
