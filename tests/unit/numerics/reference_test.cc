#include "worker/numerics/reference.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/input_hash.h"

namespace colltest {
namespace {

CaseShape IntegerShape(DType t, uint32_t n, bool residual) {
  CaseShape s;
  s.dtype = t;
  s.pattern = Pattern::kIntegers;
  s.world = 2;
  s.m = 1;
  s.n = n;
  s.residual = residual;
  s.eps = 1e-6f;
  s.seed = 2024;
  return s;
}

// World 2, one row of 16 small integers: the sums are exact, so the expected residual_out is plain
// integer arithmetic and out is the exact RMSNorm, which T may only round by half an ulp.
TEST(ReferenceTest, HandComputedIntegerRow) {
  for (DType t : {DType::kBf16, DType::kFp16, DType::kFp32}) {
    for (bool residual : {true, false}) {
      SCOPED_TRACE(std::string(DTypeName(t)) + (residual ? " residual" : " no residual"));
      const CaseShape shape = IntegerShape(t, 16, residual);
      const uint64_t call = 3;
      const ReferenceRows ref = ComputeReference(shape, call);
      ASSERT_EQ(ref.residual_out.size(), 16u);
      ASSERT_EQ(ref.out.size(), 16u);

      int expected[16];
      long sum_sq = 0;
      for (uint32_t c = 0; c < 16; ++c) {
        const int x0 = static_cast<int>(
            InputValue(shape.pattern, t, shape.seed, call, shape.world, 0, 0, shape.n, c));
        const int x1 = static_cast<int>(
            InputValue(shape.pattern, t, shape.seed, call, shape.world, 1, 0, shape.n, c));
        const int r =
            static_cast<int>(ResidualValue(shape.pattern, t, shape.seed, call, 0, shape.n, c));
        expected[c] = x0 + x1 + (residual ? r : 0);
        sum_sq += expected[c] * expected[c];
      }
      // bf16 keeps 8 significant bits, fp16 11, fp32 24: half an ulp relative to the value.
      const double half_ulp = t == DType::kBf16 ? 0x1p-8 : t == DType::kFp16 ? 0x1p-11 : 0x1p-24;
      const double rms = std::sqrt(static_cast<double>(sum_sq) / 16 + 1e-6);
      for (uint32_t c = 0; c < 16; ++c) {
        EXPECT_EQ(ref.residual_out[c], static_cast<float>(expected[c])) << c;
        const double w = WeightValue(shape.pattern, t, shape.seed, c);
        const double exact = expected[c] / rms * w;
        EXPECT_NEAR(ref.out[c], exact, std::fabs(exact) * half_ulp * 1.0001) << c;
        EXPECT_EQ(RoundTo(t, ref.out[c]), ref.out[c]);
      }
    }
  }
}

TEST(ReferenceTest, ResidualOnAndOffDiffer) {
  const ReferenceRows with = ComputeReference(IntegerShape(DType::kBf16, 64, true), 1);
  const ReferenceRows without = ComputeReference(IntegerShape(DType::kBf16, 64, false), 1);
  int differ = 0;
  for (uint32_t c = 0; c < 64; ++c) {
    const float r = ResidualValue(Pattern::kIntegers, DType::kBf16, 2024, 1, 0, 64, c);
    EXPECT_EQ(with.residual_out[c], without.residual_out[c] + r) << c;
    differ += with.out[c] != without.out[c];
  }
  EXPECT_GT(differ, 32);
}

// fp32 sums in rank order, rounded to T after the all-reduce and again after the residual add.
TEST(ReferenceTest, NormalFollowsTheDesignArithmeticOrder) {
  for (DType t : {DType::kBf16, DType::kFp16, DType::kFp32}) {
    SCOPED_TRACE(DTypeName(t));
    CaseShape shape;
    shape.dtype = t;
    shape.pattern = Pattern::kNormal;
    shape.world = 8;
    shape.m = 3;
    shape.n = 300;
    shape.seed = 99;
    const uint64_t call = 17;
    const ReferenceRows ref = ComputeReference(shape, call);
    for (uint32_t row = 0; row < shape.m; ++row) {
      std::vector<float> ro(shape.n);
      double ss = 0;
      for (uint32_t c = 0; c < shape.n; ++c) {
        float s = InputValue(shape.pattern, t, shape.seed, call, shape.world, 0, row, shape.n, c);
        for (uint32_t r = 1; r < shape.world; ++r) {
          s += InputValue(shape.pattern, t, shape.seed, call, shape.world, r, row, shape.n, c);
        }
        s = RoundTo(t, s);
        ro[c] = RoundTo(t, s + ResidualValue(shape.pattern, t, shape.seed, call, row, shape.n, c));
        ASSERT_EQ(FloatBits(ref.residual_out[row * shape.n + c]), FloatBits(ro[c])) << c;
        ss += static_cast<double>(ro[c]) * ro[c];
      }
      const double inv = 1 / std::sqrt(ss / shape.n + static_cast<double>(shape.eps));
      double norm_ss = 0;
      for (uint32_t c = 0; c < shape.n; ++c) {
        const double w = WeightValue(shape.pattern, t, shape.seed, c);
        const float want = RoundTo(t, static_cast<float>(ro[c] * inv * w));
        const float got = ref.out[row * shape.n + c];
        ASSERT_EQ(got, want) << c;
        norm_ss += (got / w) * (got / w);
      }
      // The normalised row has unit RMS, up to T's rounding.
      EXPECT_NEAR(norm_ss / shape.n, 1.0, t == DType::kFp32 ? 1e-5 : 2e-2);
    }
  }
}

TEST(ReferenceTest, DeterministicAndCallDependent) {
  CaseShape shape;
  shape.world = 4;
  shape.m = 2;
  shape.n = 128;
  const ReferenceRows a = ComputeReference(shape, 5);
  const ReferenceRows b = ComputeReference(shape, 5);
  const ReferenceRows c = ComputeReference(shape, 6);
  EXPECT_EQ(a.residual_out, b.residual_out);
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.residual_out, c.residual_out);
}

TEST(ReferenceTest, NegZeroSumsStayNegativeZero) {
  for (DType t : {DType::kBf16, DType::kFp16, DType::kFp32}) {
    for (bool residual : {true, false}) {
      SCOPED_TRACE(std::string(DTypeName(t)) + (residual ? " residual" : " no residual"));
      CaseShape shape;
      shape.dtype = t;
      shape.pattern = Pattern::kNegZero;
      shape.world = 8;
      shape.m = 2;
      shape.n = 256;
      shape.residual = residual;
      const ReferenceRows ref = ComputeReference(shape, 4);
      int neg_zero = 0;
      for (uint32_t i = 0; i < shape.m * shape.n; ++i) {
        const uint32_t row = i / shape.n, col = i % shape.n;
        if (FloatBits(InputValue(shape.pattern, t, shape.seed, 4, shape.world, 0, row, shape.n,
                                 col)) != 0x80000000u) {
          continue;
        }
        // Rank 0 has -0.0 only in all--0.0 packs, where every rank and the residual agree.
        ASSERT_EQ(FloatBits(ref.residual_out[i]), 0x80000000u) << i;
        ASSERT_EQ(FloatBits(ref.out[i]), 0x80000000u) << i;
        ++neg_zero;
      }
      EXPECT_GT(neg_zero, 100);
    }
  }
}

TEST(ReferenceTest, ExtremePatternsStayFinite) {
  for (Pattern p : {Pattern::kLarge, Pattern::kDenormal}) {
    for (DType t : {DType::kBf16, DType::kFp16, DType::kFp32}) {
      SCOPED_TRACE(std::string(PatternName(p)) + "/" + DTypeName(t));
      CaseShape shape;
      shape.dtype = t;
      shape.pattern = p;
      shape.world = 8;
      shape.m = 2;
      shape.n = 512;
      const ReferenceRows ref = ComputeReference(shape, 0);
      for (size_t i = 0; i < ref.out.size(); ++i) {
        ASSERT_TRUE(std::isfinite(ref.residual_out[i])) << i;
        ASSERT_TRUE(std::isfinite(ref.out[i])) << i;
      }
    }
  }
}

TEST(ReferenceTest, EmptyShapes) {
  CaseShape shape;
  shape.m = 0;
  EXPECT_TRUE(ComputeReference(shape, 0).out.empty());
  shape.m = 3;
  shape.n = 0;
  EXPECT_TRUE(ComputeReference(shape, 0).residual_out.empty());
}

int progress_calls = 0;
void CountProgress() { ++progress_calls; }

// One progress report per row, so the worker's heartbeat moves through a large reference.
TEST(ReferenceTest, ReportsProgressPerRow) {
  CaseShape shape = IntegerShape(DType::kBf16, 16, true);
  shape.m = 5;
  progress_calls = 0;
  ComputeReference(shape, 0, &CountProgress);
  EXPECT_EQ(progress_calls, 5);
}

}  // namespace
}  // namespace colltest
