#include "worker/numerics/input_hash.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "worker/numerics/dtype.h"

namespace colltest {
namespace {

constexpr DType kAllDTypes[] = {DType::kBf16, DType::kFp16, DType::kFp32};
constexpr Pattern kAllPatterns[] = {
    Pattern::kNormal,        Pattern::kIntegers, Pattern::kNegZero,      Pattern::kLarge,
    Pattern::kDenormal,      Pattern::kSame,     Pattern::kAmaxLastRank, Pattern::kQuantTies,
    Pattern::kQuantSaturate, Pattern::kZeroRows};
// The world and the row length only place amax_last_rank's spike: any will do for the others, as
// long as the row is longer than every column read.
constexpr uint32_t kAnyWorld = 8;
constexpr uint32_t kWideRow = 1u << 16;

bool Representable(DType t, float v) { return FloatBits(RoundTo(t, v)) == FloatBits(v); }
bool IsNegZero(float v) { return FloatBits(v) == 0x80000000u; }
bool IsPosZero(float v) { return FloatBits(v) == 0u; }

TEST(InputHashTest, PatternNames) {
  EXPECT_STREQ(PatternName(Pattern::kNormal), "normal");
  EXPECT_STREQ(PatternName(Pattern::kIntegers), "integers");
  EXPECT_STREQ(PatternName(Pattern::kNegZero), "neg_zero");
  EXPECT_STREQ(PatternName(Pattern::kLarge), "large");
  EXPECT_STREQ(PatternName(Pattern::kDenormal), "denormal");
  EXPECT_STREQ(PatternName(Pattern::kSame), "same");
  EXPECT_STREQ(PatternName(Pattern::kAmaxLastRank), "amax_last_rank");
  EXPECT_STREQ(PatternName(Pattern::kQuantTies), "quant_ties");
  EXPECT_STREQ(PatternName(Pattern::kQuantSaturate), "quant_saturate");
  EXPECT_STREQ(PatternName(Pattern::kZeroRows), "zero_rows");
}

TEST(InputHashTest, HashIsDeterministic) {
  EXPECT_EQ(HashCoords(1, 2, 3, 4, 5), HashCoords(1, 2, 3, 4, 5));
  EXPECT_EQ(HashCoords(0, 0, 0, 0, 0), HashCoords(0, 0, 0, 0, 0));
  EXPECT_NE(HashCoords(0, 0, 0, 0, 0), 0u);
}

// Flipping any single bit of any coordinate must change about half of the output bits.
TEST(InputHashTest, HashDependsOnEveryBitOfEveryCoordinate) {
  const uint64_t seed = 0x1234567890abcdefull, call = 77;
  const uint32_t stream = 5, row = 300, col = 4099;
  const uint64_t base = HashCoords(seed, call, stream, row, col);
  struct Coord {
    const char* name;
    int bits;
  };
  for (Coord c : {Coord{"seed", 64}, Coord{"call", 64}, Coord{"stream", 32}, Coord{"row", 32},
                  Coord{"col", 32}}) {
    SCOPED_TRACE(c.name);
    int total_flipped = 0;
    for (int b = 0; b < c.bits; ++b) {
      uint64_t s = seed, k = call;
      uint32_t st = stream, r = row, co = col;
      const std::string name = c.name;
      if (name == "seed") s ^= 1ull << b;
      if (name == "call") k ^= 1ull << b;
      if (name == "stream") st ^= 1u << b;
      if (name == "row") r ^= 1u << b;
      if (name == "col") co ^= 1u << b;
      const int flipped = std::popcount(HashCoords(s, k, st, r, co) ^ base);
      EXPECT_GE(flipped, 10) << "bit " << b;
      total_flipped += flipped;
    }
    const double mean = static_cast<double>(total_flipped) / c.bits;
    EXPECT_GT(mean, 28.0);
    EXPECT_LT(mean, 36.0);
  }
}

TEST(InputHashTest, HashDistinguishesRowFromColumn) {
  std::set<uint64_t> seen;
  for (uint32_t r = 0; r < 64; ++r) {
    for (uint32_t c = 0; c < 64; ++c) seen.insert(HashCoords(9, 1, 0, r, c));
  }
  EXPECT_EQ(seen.size(), 64u * 64u);
  EXPECT_NE(HashCoords(9, 1, 0, 2, 3), HashCoords(9, 1, 0, 3, 2));
  EXPECT_NE(HashCoords(9, 1, 2, 0, 3), HashCoords(9, 1, 3, 0, 2));
  EXPECT_NE(HashCoords(1, 2, 0, 0, 0), HashCoords(2, 1, 0, 0, 0));
}

TEST(InputHashTest, EveryValueIsRepresentable) {
  for (Pattern p : kAllPatterns) {
    for (DType t : kAllDTypes) {
      SCOPED_TRACE(std::string(PatternName(p)) + "/" + DTypeName(t));
      for (uint32_t col = 0; col < 512; ++col) {
        for (uint32_t rank = 0; rank < 4; ++rank) {
          const float v = InputValue(p, t, 3, 1, 4, rank, 2, 512, col);
          ASSERT_TRUE(std::isfinite(v));
          ASSERT_TRUE(Representable(t, v)) << v;
        }
        const float r = ResidualValue(p, t, 3, 1, 2, 512, col);
        ASSERT_TRUE(std::isfinite(r));
        ASSERT_TRUE(Representable(t, r)) << r;
        const float w = WeightValue(p, t, 3, col);
        ASSERT_TRUE(Representable(t, w)) << w;
        ASSERT_GT(w, 0.0f);
      }
    }
  }
}

TEST(InputHashTest, RowsMatchElements) {
  // n = 37 leaves a partial pack at the end of each row.
  constexpr uint32_t kN = 37;
  std::vector<float> row(kN);
  for (Pattern p : kAllPatterns) {
    for (DType t : kAllDTypes) {
      SCOPED_TRACE(std::string(PatternName(p)) + "/" + DTypeName(t));
      for (uint32_t rank = 0; rank < 3; ++rank) {
        InputRow(p, t, 42, 6, 3, rank, 9, kN, row.data());
        for (uint32_t c = 0; c < kN; ++c) {
          ASSERT_EQ(FloatBits(row[c]), FloatBits(InputValue(p, t, 42, 6, 3, rank, 9, kN, c))) << c;
        }
      }
      ResidualRow(p, t, 42, 6, 9, kN, row.data());
      for (uint32_t c = 0; c < kN; ++c) {
        ASSERT_EQ(FloatBits(row[c]), FloatBits(ResidualValue(p, t, 42, 6, 9, kN, c))) << c;
      }
      WeightRow(p, t, 42, kN, row.data());
      for (uint32_t c = 0; c < kN; ++c) {
        ASSERT_EQ(FloatBits(row[c]), FloatBits(WeightValue(p, t, 42, c))) << c;
      }
    }
  }
}

TEST(InputHashTest, InputsDependOnSeedCallRankRowAndColumn) {
  const DType t = DType::kFp32;
  const Pattern p = Pattern::kNormal;
  int differ_seed = 0, differ_call = 0, differ_rank = 0, differ_row = 0, differ_col = 0;
  for (uint32_t c = 0; c < 256; ++c) {
    const float v = InputValue(p, t, 5, 3, kAnyWorld, 1, 2, kWideRow, c);
    differ_seed += v != InputValue(p, t, 6, 3, kAnyWorld, 1, 2, kWideRow, c);
    differ_call += v != InputValue(p, t, 5, 4, kAnyWorld, 1, 2, kWideRow, c);
    differ_rank += v != InputValue(p, t, 5, 3, kAnyWorld, 0, 2, kWideRow, c);
    differ_row += v != InputValue(p, t, 5, 3, kAnyWorld, 1, 3, kWideRow, c);
    differ_col += v != InputValue(p, t, 5, 3, kAnyWorld, 1, 2, kWideRow, c + 1);
  }
  EXPECT_GT(differ_seed, 250);
  EXPECT_GT(differ_call, 250);
  EXPECT_GT(differ_rank, 250);
  EXPECT_GT(differ_row, 250);
  EXPECT_GT(differ_col, 250);
  // The residual and the weight are streams of their own, not a rank's input.
  int residual_is_rank0 = 0;
  for (uint32_t c = 0; c < 256; ++c) {
    residual_is_rank0 += ResidualValue(p, t, 5, 3, 2, kWideRow, c) ==
                         InputValue(p, t, 5, 3, kAnyWorld, 0, 2, kWideRow, c);
  }
  EXPECT_LT(residual_is_rank0, 5);
}

TEST(InputHashTest, NormalHasZeroMeanAndUnitDeviation) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(DTypeName(t));
    double sum = 0, sum_sq = 0, max_abs = 0;
    constexpr int kRows = 100, kCols = 2000;
    for (uint32_t r = 0; r < kRows; ++r) {
      for (uint32_t c = 0; c < kCols; ++c) {
        const double v = InputValue(Pattern::kNormal, t, 1, 0, kAnyWorld, r % 8, r, kWideRow, c);
        sum += v;
        sum_sq += v * v;
        max_abs = std::fmax(max_abs, std::fabs(v));
      }
    }
    const double count = kRows * kCols;
    const double mean = sum / count;
    const double stddev = std::sqrt(sum_sq / count - mean * mean);
    EXPECT_NEAR(mean, 0.0, 0.01);
    EXPECT_NEAR(stddev, 1.0, 0.02);
    EXPECT_LE(max_abs, 3.47);  // Irwin-Hall of 4 is bounded by 2 sqrt(3)
    EXPECT_GT(max_abs, 2.5);
  }
}

TEST(InputHashTest, IntegersAreSmallIntegers) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(DTypeName(t));
    std::set<float> inputs, residuals, weights;
    for (uint32_t c = 0; c < 2000; ++c) {
      for (uint32_t rank = 0; rank < 8; ++rank) {
        inputs.insert(InputValue(Pattern::kIntegers, t, 2, 1, kAnyWorld, rank, 0, kWideRow, c));
      }
      residuals.insert(ResidualValue(Pattern::kIntegers, t, 2, 1, 0, kWideRow, c));
      weights.insert(WeightValue(Pattern::kIntegers, t, 2, c));
    }
    EXPECT_EQ(inputs, (std::set<float>{-3, -2, -1, 0, 1, 2, 3}));
    EXPECT_EQ(residuals, (std::set<float>{-3, -2, -1, 0, 1, 2, 3}));
    EXPECT_EQ(weights, (std::set<float>{1, 2, 3}));
  }
}

TEST(InputHashTest, NegZeroHasWholePacksOfNegativeZeroOnEveryRank) {
  constexpr uint32_t kWorld = 8, kRows = 4, kN = 512;
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(DTypeName(t));
    const uint32_t pe = PackElems(t);
    int neg_packs = 0, mixed_packs = 0, pos_zeros = 0, nonzeros = 0, rank_differs = 0;
    for (uint32_t row = 0; row < kRows; ++row) {
      for (uint32_t c0 = 0; c0 < kN; c0 += pe) {
        // Whether a pack is all -0.0 must not depend on the rank.
        bool all_neg_rank0 = true;
        for (uint32_t c = c0; c < c0 + pe; ++c) {
          all_neg_rank0 &=
              IsNegZero(InputValue(Pattern::kNegZero, t, 4, 2, kAnyWorld, 0, row, kWideRow, c));
        }
        for (uint32_t rank = 0; rank < kWorld; ++rank) {
          for (uint32_t c = c0; c < c0 + pe; ++c) {
            const float v =
                InputValue(Pattern::kNegZero, t, 4, 2, kAnyWorld, rank, row, kWideRow, c);
            if (all_neg_rank0) {
              ASSERT_TRUE(IsNegZero(v)) << "rank " << rank << " row " << row << " col " << c;
            } else {
              // Outside the all--0.0 packs: +0.0 or a nonzero small integer, never -0.0.
              ASSERT_FALSE(IsNegZero(v));
              ASSERT_TRUE(IsPosZero(v) || (v == std::round(v) && std::fabs(v) <= 3)) << v;
              pos_zeros += IsPosZero(v);
              nonzeros += v != 0;
              rank_differs += FloatBits(v) != FloatBits(InputValue(Pattern::kNegZero, t, 4, 2,
                                                                   kAnyWorld, 0, row, kWideRow, c));
            }
          }
        }
        for (uint32_t c = c0; c < c0 + pe; ++c) {
          const float r = ResidualValue(Pattern::kNegZero, t, 4, 2, row, kWideRow, c);
          if (all_neg_rank0) {
            ASSERT_TRUE(IsNegZero(r)) << "residual row " << row << " col " << c;
          } else {
            ASSERT_FALSE(IsNegZero(r));
          }
        }
        (all_neg_rank0 ? neg_packs : mixed_packs)++;
      }
    }
    const int packs = neg_packs + mixed_packs;
    EXPECT_GT(neg_packs, packs * 35 / 100);
    EXPECT_GT(mixed_packs, packs * 35 / 100);
    EXPECT_GT(pos_zeros, 0);
    EXPECT_GT(nonzeros, 0);
    EXPECT_GT(rank_differs, 0);
  }
}

TEST(InputHashTest, NegZeroPacksFollowTheDTypesPackWidth) {
  // For fp32 a pack is 4 elements; the -0.0 decision must change at 4-element boundaries.
  int packs_split_at_4 = 0;
  for (uint32_t c0 = 0; c0 < 1024; c0 += 8) {
    const bool first =
        IsNegZero(InputValue(Pattern::kNegZero, DType::kFp32, 1, 0, kAnyWorld, 0, 0, kWideRow, c0));
    const bool second = IsNegZero(
        InputValue(Pattern::kNegZero, DType::kFp32, 1, 0, kAnyWorld, 0, 0, kWideRow, c0 + 4));
    // A mixed pack can start with +0.0 too, so compare whole 4-packs.
    bool all_first = true, all_second = true;
    for (uint32_t c = 0; c < 4; ++c) {
      all_first &= IsNegZero(
          InputValue(Pattern::kNegZero, DType::kFp32, 1, 0, kAnyWorld, 0, 0, kWideRow, c0 + c));
      all_second &= IsNegZero(
          InputValue(Pattern::kNegZero, DType::kFp32, 1, 0, kAnyWorld, 0, 0, kWideRow, c0 + 4 + c));
    }
    EXPECT_EQ(first, all_first);
    EXPECT_EQ(second, all_second);
    packs_split_at_4 += all_first != all_second;
  }
  EXPECT_GT(packs_split_at_4, 20);
}

TEST(InputHashTest, LargeMagnitudes) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(DTypeName(t));
    int negative = 0, positive = 0;
    double max_abs = 0, min_abs = 1e30;
    for (uint32_t c = 0; c < 4000; ++c) {
      for (uint32_t rank = 0; rank < 8; ++rank) {
        const float v = InputValue(Pattern::kLarge, t, 8, 1, kAnyWorld, rank, 3, kWideRow, c);
        negative += v < 0;
        positive += v > 0;
        max_abs = std::fmax(max_abs, std::fabs(v));
        min_abs = std::fmin(min_abs, std::fabs(v));
      }
      const float r = ResidualValue(Pattern::kLarge, t, 8, 1, 3, kWideRow, c);
      ASSERT_GE(std::fabs(r), 256.0f);
      ASSERT_LE(std::fabs(r), 4096.0f);
    }
    EXPECT_GE(min_abs, 256.0);
    EXPECT_LE(max_abs, 4096.0);
    EXPECT_LT(min_abs, 300.0);
    EXPECT_GT(max_abs, 3500.0);
    EXPECT_GT(negative, 8000);
    EXPECT_GT(positive, 8000);
    // Eight ranks plus a residual at the largest magnitude still fit in fp16.
    EXPECT_LT(9 * max_abs, 65504.0);
  }
}

TEST(InputHashTest, DenormalsAreSubnormalInT) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(DTypeName(t));
    const float min_normal = t == DType::kFp16 ? 0x1p-14f : std::numeric_limits<float>::min();
    int negative = 0, positive = 0;
    std::set<float> distinct;
    for (uint32_t c = 0; c < 2000; ++c) {
      for (uint32_t rank = 0; rank < 4; ++rank) {
        const float v = InputValue(Pattern::kDenormal, t, 8, 1, kAnyWorld, rank, 0, kWideRow, c);
        ASSERT_NE(v, 0.0f);
        ASSERT_LT(std::fabs(v), min_normal) << v;
        if (t != DType::kFp16) {
          ASSERT_EQ(std::fpclassify(v), FP_SUBNORMAL);
        }
        negative += v < 0;
        positive += v > 0;
        distinct.insert(v);
      }
      const float r = ResidualValue(Pattern::kDenormal, t, 8, 1, 0, kWideRow, c);
      ASSERT_NE(r, 0.0f);
      ASSERT_LT(std::fabs(r), min_normal);
    }
    EXPECT_GT(negative, 3000);
    EXPECT_GT(positive, 3000);
    EXPECT_GT(distinct.size(), 200u);
  }
}

TEST(InputHashTest, SameIsRankIndependentAndNormalIsNot) {
  for (DType t : kAllDTypes) {
    int normal_equal = 0;
    for (uint32_t c = 0; c < 500; ++c) {
      const float v0 = InputValue(Pattern::kSame, t, 3, 2, kAnyWorld, 0, 1, kWideRow, c);
      for (uint32_t rank = 1; rank < 8; ++rank) {
        ASSERT_EQ(FloatBits(InputValue(Pattern::kSame, t, 3, 2, kAnyWorld, rank, 1, kWideRow, c)),
                  FloatBits(v0));
      }
      normal_equal += InputValue(Pattern::kNormal, t, 3, 2, kAnyWorld, 0, 1, kWideRow, c) ==
                      InputValue(Pattern::kNormal, t, 3, 2, kAnyWorld, 1, 1, kWideRow, c);
    }
    EXPECT_LT(normal_equal, 50);
  }
  // Still a normal distribution, still varying with the column and the call.
  double sum_sq = 0;
  for (uint32_t c = 0; c < 20000; ++c) {
    const double v = InputValue(Pattern::kSame, DType::kFp32, 3, 2, kAnyWorld, 5, 1, kWideRow, c);
    sum_sq += v * v;
  }
  EXPECT_NEAR(sum_sq / 20000, 1.0, 0.05);
  EXPECT_NE(InputValue(Pattern::kSame, DType::kFp32, 3, 2, kAnyWorld, 0, 1, kWideRow, 0),
            InputValue(Pattern::kSame, DType::kFp32, 3, 3, kAnyWorld, 0, 1, kWideRow, 0));
}

TEST(InputHashTest, WeightIsAroundOneAndCallIndependent) {
  for (Pattern p : {Pattern::kNormal, Pattern::kNegZero, Pattern::kLarge, Pattern::kDenormal,
                    Pattern::kSame, Pattern::kAmaxLastRank, Pattern::kZeroRows}) {
    for (DType t : kAllDTypes) {
      double lo = 10, hi = 0;
      for (uint32_t c = 0; c < 2000; ++c) {
        const double w = WeightValue(p, t, 12, c);
        lo = std::fmin(lo, w);
        hi = std::fmax(hi, w);
      }
      EXPECT_GE(lo, 0.5);
      EXPECT_LE(hi, 1.5);
      EXPECT_LT(lo, 0.6);
      EXPECT_GT(hi, 1.4);
    }
  }
  EXPECT_NE(WeightValue(Pattern::kNormal, DType::kFp32, 12, 0),
            WeightValue(Pattern::kNormal, DType::kFp32, 13, 0));
}

}  // namespace
}  // namespace colltest
