// The input patterns aimed at the quantising epilogues (docs/input.md): each one must put the
// normed output where its name says, through the reference, in every dtype.
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/fp4.h"
#include "worker/numerics/fp8.h"
#include "worker/numerics/input_hash.h"
#include "worker/numerics/quant_epilogue.h"
#include "worker/numerics/reference.h"

namespace colltest {
namespace {

constexpr DType kAllDTypes[] = {DType::kBf16, DType::kFp16, DType::kFp32};
constexpr uint32_t kWorlds[] = {2, 4, 8};
constexpr Fp8Format kFn = Fp8Format::kE4m3fn;

bool IsPosZero(float v) { return FloatBits(v) == 0u; }

CaseShape PatternShape(Pattern p, DType t, uint32_t world, uint32_t m, uint32_t n, bool residual,
                       uint64_t seed = 5) {
  CaseShape s;
  s.dtype = t;
  s.pattern = p;
  s.world = world;
  s.m = m;
  s.n = n;
  s.residual = residual;
  s.seed = seed;
  return s;
}

std::string Trace(DType t, uint32_t world, bool residual) {
  return std::string(DTypeName(t)) + " W=" + std::to_string(world) +
         (residual ? " residual" : " no residual");
}

// True when v lies exactly halfway between two neighbouring non-negative values of `grid` (which
// is in increasing order).
bool IsTie(const std::vector<float>& grid, float v) {
  for (size_t i = 0; i + 1 < grid.size(); ++i) {
    if (grid[i] < v && v < grid[i + 1]) return v - grid[i] == grid[i + 1] - v;
  }
  return false;
}

std::vector<float> Fp8Magnitudes() {
  std::vector<float> grid;
  for (uint32_t code = 0; code <= Fp8MaxMagnitude(kFn); ++code) {
    grid.push_back(DecodeFp8(kFn, static_cast<uint8_t>(code)));
  }
  return grid;
}

std::vector<float> E2m1Magnitudes() {
  std::vector<float> grid;
  for (uint32_t code = 0; code <= kE2m1MaxMagnitude; ++code) {
    grid.push_back(DecodeE2m1(static_cast<uint8_t>(code)));
  }
  return grid;
}

// amax_last_rank: exactly one column of every row carries the spike, in the row's last eighth;
// only the last rank has it, the other ranks and the residual give +0.0 there.
TEST(QuantPatternsTest, AmaxLastRankSpikeIsInTheLastEighthOnTheLastRankOnly) {
  for (DType t : kAllDTypes) {
    for (uint32_t world : kWorlds) {
      for (uint32_t n : {1u, 8u, 64u, 100u, 1024u}) {
        SCOPED_TRACE(std::string(DTypeName(t)) + " W=" + std::to_string(world) +
                     " n=" + std::to_string(n));
        std::set<uint32_t> spike_cols;
        int negative = 0;
        for (uint32_t row = 0; row < 32; ++row) {
          const Pattern p = Pattern::kAmaxLastRank;
          std::vector<float> last(n);
          InputRow(p, t, 7, 3, world, world - 1, row, n, last.data());
          std::vector<uint32_t> spikes;
          for (uint32_t c = 0; c < n; ++c) {
            if (std::fabs(last[c]) == kAmaxSpike) spikes.push_back(c);
          }
          ASSERT_EQ(spikes.size(), 1u) << "row " << row;
          const uint32_t spike = spikes[0];
          const uint32_t eighth = n / 8 > 1 ? n / 8 : 1;
          ASSERT_GE(spike, n - eighth) << "row " << row;
          spike_cols.insert(spike);
          negative += last[spike] < 0;
          for (uint32_t rank = 0; rank + 1 < world; ++rank) {
            ASSERT_TRUE(IsPosZero(InputValue(p, t, 7, 3, world, rank, row, n, spike))) << rank;
          }
          ASSERT_TRUE(IsPosZero(ResidualValue(p, t, 7, 3, row, n, spike)));
          // Everywhere else the inputs are normal's.
          for (uint32_t c = 0; c < n; ++c) {
            if (c == spike) continue;
            ASSERT_EQ(last[c], InputValue(Pattern::kNormal, t, 7, 3, world, world - 1, row, n, c));
          }
        }
        if (n >= 64) {
          EXPECT_GT(spike_cols.size(), 4u);  // the column moves with the row
          EXPECT_GT(negative, 4);
          EXPECT_LT(negative, 28);
        }
      }
    }
  }
}

// Through the reference, the row's amax after the norm is the spike: it needs the last rank.
TEST(QuantPatternsTest, AmaxLastRankRowAmaxIsTheLastRanksSpike) {
  constexpr uint32_t kM = 16, kN = 1024;
  for (DType t : kAllDTypes) {
    for (uint32_t world : kWorlds) {
      for (bool residual : {true, false}) {
        SCOPED_TRACE(Trace(t, world, residual));
        const CaseShape shape = PatternShape(Pattern::kAmaxLastRank, t, world, kM, kN, residual);
        const ReferenceRows ref = ComputeReference(shape, 2);
        for (uint32_t row = 0; row < kM; ++row) {
          std::vector<float> last(kN);
          InputRow(shape.pattern, t, shape.seed, 2, world, world - 1, row, kN, last.data());
          const float* out = ref.out.data() + row * kN;
          const float* sum = ref.residual_out.data() + row * kN;
          uint32_t arg = 0;
          for (uint32_t c = 1; c < kN; ++c) {
            if (std::fabs(out[c]) > std::fabs(out[arg])) arg = c;
          }
          ASSERT_EQ(std::fabs(last[arg]), kAmaxSpike) << "row " << row;
          ASSERT_EQ(sum[arg], last[arg]) << "row " << row;
          ASSERT_GE(arg, kN - kN / 8);
          for (uint32_t c = 0; c < kN; ++c) {
            if (c == arg) continue;
            ASSERT_LT(std::fabs(out[c]), std::fabs(out[arg])) << c;
          }
        }
      }
    }
  }
}

TEST(QuantPatternsTest, QuantTiesInputsAndWeights) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(DTypeName(t));
    int negative = 0;
    for (uint32_t c = 0; c < 256; ++c) {
      const float x = InputValue(Pattern::kQuantTies, t, 1, 4, 8, 0, 3, 256, c);
      ASSERT_EQ(std::fabs(x), kQuantTiesInput) << c;
      negative += x < 0;
      for (uint32_t rank = 1; rank < 8; ++rank) {
        ASSERT_TRUE(IsPosZero(InputValue(Pattern::kQuantTies, t, 1, 4, 8, rank, 3, 256, c)));
      }
      ASSERT_TRUE(IsPosZero(ResidualValue(Pattern::kQuantTies, t, 1, 4, 3, 256, c)));
      const float w = WeightValue(Pattern::kQuantTies, t, 1, c);
      ASSERT_EQ(FloatBits(RoundTo(t, w)), FloatBits(w)) << c;         // exact in T
      ASSERT_EQ(w, WeightValue(Pattern::kQuantTies, t, 99, c % 32));  // a table, by column
    }
    EXPECT_GT(negative, 80);
    EXPECT_LT(negative, 176);
  }
}

// Every normed y is +-weight exactly; every value of an odd block but its first (the row amax, 14)
// is, in FP8 code units y * 32, halfway between two e4m3fn codes; every value of an even block
// but 6 is halfway between two E2M1 values, at block scale 256 and output scale 1.
TEST(QuantPatternsTest, QuantTiesNormedValuesAreExactTies) {
  constexpr uint32_t kM = 4, kN = 96;
  const std::vector<float> fp8_grid = Fp8Magnitudes();
  const std::vector<float> e2m1_grid = E2m1Magnitudes();
  for (DType t : kAllDTypes) {
    for (uint32_t world : kWorlds) {
      for (bool residual : {true, false}) {
        SCOPED_TRACE(Trace(t, world, residual));
        const CaseShape shape = PatternShape(Pattern::kQuantTies, t, world, kM, kN, residual);
        const ReferenceRows ref = ComputeReference(shape, 1);
        int negative = 0;
        for (uint32_t row = 0; row < kM; ++row) {
          const float* y = ref.out.data() + row * kN;
          for (uint32_t c = 0; c < kN; ++c) {
            const float x = InputValue(shape.pattern, t, shape.seed, 1, world, 0, row, kN, c);
            const float w = WeightValue(shape.pattern, t, shape.seed, c);
            ASSERT_EQ(y[c], x < 0 ? -w : w) << "row " << row << " col " << c;
            negative += y[c] < 0;
            const bool first = c % 16 == 0;
            if ((c / 16) % 2 == 1) {
              const float v = std::fabs(y[c]) * 32;
              if (first) {
                ASSERT_EQ(v, Fp8MaxFinite(kFn)) << c;
              } else {
                ASSERT_TRUE(IsTie(fp8_grid, v)) << "col " << c << " v " << v;
              }
            } else if (first || c % 16 == 8) {
              ASSERT_EQ(std::fabs(y[c]), kE2m1MaxFinite) << c;
            } else {
              ASSERT_TRUE(IsTie(e2m1_grid, std::fabs(y[c]))) << "col " << c << " y " << y[c];
            }
          }
          // The scales the ties were chosen for.
          EXPECT_EQ(QuantizeFp8TokenRow(y, kN, kFn).scale, 1.0f / 32);
          const QuantizedRow nvfp4 = QuantizeNvfp4Row(y, kN, 256.0f);
          for (uint32_t b = 0; b < kN / 16; b += 2) {
            EXPECT_EQ(Nvfp4OutputScale(nvfp4.block_scales[b], 256.0f), 1.0f) << "block " << b;
          }
        }
        EXPECT_GT(negative, 0);
        EXPECT_LT(negative, static_cast<int>(kM * kN));
      }
    }
  }
}

// Weights of 64 at col % 16 == 5 push the normed output far past 14, fp8_tensor's default range
// (14 * 4 here), so FP8 codes and nvfp4 block scales saturate.
TEST(QuantPatternsTest, QuantSaturateGoesFarPastTheDefaultRange) {
  for (DType t : kAllDTypes) {
    for (uint32_t world : kWorlds) {
      for (uint32_t n : {64u, 256u, 1000u}) {
        for (uint64_t seed : {0ull, 1ull, 7ull, 12345ull}) {
          SCOPED_TRACE(Trace(t, world, true) + " n=" + std::to_string(n) +
                       " seed=" + std::to_string(seed));
          constexpr uint32_t kM = 8;
          const ReferenceRows ref = ComputeReference(
              PatternShape(Pattern::kQuantSaturate, t, world, kM, n, true, seed), 0);
          float max_abs = 0;
          bool fp8_saturated = false, nvfp4_saturated = false;
          for (uint32_t row = 0; row < kM; ++row) {
            const float* y = ref.out.data() + row * n;
            for (uint32_t c = 0; c < n; ++c) {
              ASSERT_TRUE(std::isfinite(y[c]));
              max_abs = std::fmax(max_abs, std::fabs(y[c]));
            }
            for (uint8_t code : QuantizeFp8TensorRow(y, n, kFn, 1.0f / 32).codes) {
              fp8_saturated |= (code & 0x7f) == Fp8MaxMagnitude(kFn);
            }
            for (uint8_t sf : QuantizeNvfp4Row(y, n, 256.0f).block_scales) {
              nvfp4_saturated |= sf == Fp8MaxMagnitude(kFn);
            }
          }
          EXPECT_GT(max_abs, 14.0f * 4);
          EXPECT_TRUE(fp8_saturated);
          EXPECT_TRUE(nvfp4_saturated);
        }
      }
    }
  }
  for (uint32_t c = 0; c < 64; ++c) {
    const float w = WeightValue(Pattern::kQuantSaturate, DType::kBf16, 3, c);
    if (c % 16 == kSaturatedColumn) {
      EXPECT_EQ(w, kSaturatingWeight) << c;
    } else {
      EXPECT_EQ(w, WeightValue(Pattern::kNormal, DType::kBf16, 3, c)) << c;
    }
  }
}

// Odd rows are +0.0 everywhere, so their normed output is exactly 0 and fp8_token's scale takes
// its floor; even rows are normal's.
TEST(QuantPatternsTest, ZeroRowsAreZeroAndTheTokenScaleIsTheFloor) {
  constexpr uint32_t kM = 6, kN = 128;
  for (DType t : kAllDTypes) {
    for (uint32_t world : kWorlds) {
      for (bool residual : {true, false}) {
        SCOPED_TRACE(Trace(t, world, residual));
        const CaseShape shape = PatternShape(Pattern::kZeroRows, t, world, kM, kN, residual);
        CaseShape normal = shape;
        normal.pattern = Pattern::kNormal;
        const ReferenceRows ref = ComputeReference(shape, 3);
        const ReferenceRows want = ComputeReference(normal, 3);
        for (uint32_t row = 0; row < kM; ++row) {
          const float* y = ref.out.data() + row * kN;
          const size_t base = static_cast<size_t>(row) * kN;
          if (row % 2 == 0) {
            for (uint32_t c = 0; c < kN; ++c) ASSERT_EQ(y[c], want.out[base + c]) << c;
            continue;
          }
          for (uint32_t c = 0; c < kN; ++c) {
            ASSERT_TRUE(IsPosZero(y[c])) << "row " << row << " col " << c;
            ASSERT_TRUE(IsPosZero(ref.residual_out[base + c]));
            for (uint32_t rank = 0; rank < world; ++rank) {
              ASSERT_TRUE(IsPosZero(InputValue(shape.pattern, t, 5, 3, world, rank, row, kN, c)));
            }
          }
          for (Fp8Format f : {Fp8Format::kE4m3fn, Fp8Format::kE4m3fnuz}) {
            const QuantizedRow q = QuantizeFp8TokenRow(y, kN, f);
            EXPECT_EQ(q.scale, Fp8TokenMinScale(Fp8MaxFinite(f)));
            for (uint8_t code : q.codes) ASSERT_EQ(code, 0u);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace colltest
