// Pinned values of the patterns aimed at the quantising epilogues (docs/input.md): the host and
// the GPU kernels generate them from one header (worker/numerics/input_elements.h), so any change
// of the generator, on purpose or not, changes every backend's inputs and must show here first.
#include <cstdint>

#include "gtest/gtest.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/input_hash.h"

namespace colltest {
namespace {

constexpr uint64_t kSeed = 11;
constexpr uint64_t kCall = 3;
constexpr uint32_t kWorld = 4;
constexpr uint32_t kN = 64;

uint32_t Input(Pattern p, DType t, uint32_t rank, uint32_t row, uint32_t col) {
  return FloatBits(InputValue(p, t, kSeed, kCall, kWorld, rank, row, kN, col));
}
uint32_t Residual(Pattern p, DType t, uint32_t row, uint32_t col) {
  return FloatBits(ResidualValue(p, t, kSeed, kCall, row, kN, col));
}
uint32_t Weight(Pattern p, DType t, uint32_t col) {
  return FloatBits(WeightValue(p, t, kSeed, col));
}

TEST(InputPinsTest, AmaxLastRank) {
  const Pattern p = Pattern::kAmaxLastRank;
  // The spike's column and sign of rows 0..2, on the last rank; +0.0 there on the others.
  EXPECT_EQ(Input(p, DType::kBf16, 3, 0, 62), FloatBits(64.0f));
  EXPECT_EQ(Input(p, DType::kBf16, 3, 1, 57), FloatBits(-64.0f));
  EXPECT_EQ(Input(p, DType::kFp32, 3, 2, 61), FloatBits(64.0f));
  EXPECT_EQ(Input(p, DType::kBf16, 2, 1, 57), 0u);
  EXPECT_EQ(Residual(p, DType::kFp16, 1, 57), 0u);
  // Elsewhere normal's values.
  EXPECT_EQ(Input(p, DType::kBf16, 0, 1, 3), 0x3e4f0000u);
  EXPECT_EQ(Input(p, DType::kFp32, 3, 1, 10), 0xbf320242u);
  EXPECT_EQ(Residual(p, DType::kFp16, 2, 7), 0xbecd8000u);
  EXPECT_EQ(Weight(p, DType::kBf16, 9), 0x3faa0000u);
}

TEST(InputPinsTest, QuantTies) {
  const Pattern p = Pattern::kQuantTies;
  constexpr uint32_t kSigns[] = {1, 0, 1, 1, 0, 0};  // rank 0, row 2, columns 0..5
  for (uint32_t c = 0; c < 6; ++c) {
    EXPECT_EQ(Input(p, DType::kBf16, 0, 2, c), kSigns[c] ? 0xc5800000u : 0x45800000u) << c;
  }
  EXPECT_EQ(Input(p, DType::kFp16, 1, 2, 0), 0u);
  EXPECT_EQ(Residual(p, DType::kFp32, 2, 0), 0u);
  EXPECT_EQ(Weight(p, DType::kBf16, 21), FloatBits(13.5f / 32));  // odd block: fp8 code units
  EXPECT_EQ(Weight(p, DType::kFp16, 38), FloatBits(3.5f));        // even block: E2M1 midpoint
}

TEST(InputPinsTest, QuantSaturate) {
  const Pattern p = Pattern::kQuantSaturate;
  EXPECT_EQ(Input(p, DType::kFp16, 1, 0, 5), 0xbef72000u);
  EXPECT_EQ(Residual(p, DType::kBf16, 3, 20), 0xbf8b0000u);
  EXPECT_EQ(Weight(p, DType::kBf16, 21), FloatBits(kSaturatingWeight));
  EXPECT_EQ(Weight(p, DType::kFp32, 22), 0x3faacf00u);
}

TEST(InputPinsTest, ZeroRows) {
  const Pattern p = Pattern::kZeroRows;
  EXPECT_EQ(Input(p, DType::kBf16, 2, 0, 8), 0x3ad30000u);
  EXPECT_EQ(Input(p, DType::kFp32, 2, 2, 8), 0xbf9536a6u);
  EXPECT_EQ(Input(p, DType::kFp32, 2, 1, 8), 0u);
  EXPECT_EQ(Residual(p, DType::kFp16, 4, 1), 0x3ebc8000u);
  EXPECT_EQ(Residual(p, DType::kFp16, 5, 1), 0u);
  EXPECT_EQ(Weight(p, DType::kFp16, 2), 0x3f514000u);
}

}  // namespace
}  // namespace colltest
