#include "worker/numerics/quant_diff.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "random_rows.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/fp8.h"
#include "worker/numerics/quant_epilogue.h"

namespace colltest {
namespace {

QuantDiffSummary Compare(const QuantizedRow& want, const QuantizedRow& got,
                         const std::vector<float>& y, QuantTolerance tol, DType t = DType::kBf16) {
  return CompareQuantizedRow(want, got, y.data(), static_cast<uint32_t>(y.size()), t, tol);
}

TEST(QuantDiff, IdenticalRowsPassEveryScheme) {
  const std::vector<float> y = RandomBf16Row(128, 1);
  const float global = Nvfp4GlobalScale(AbsMax(y.data(), y.size()));
  for (const QuantizedRow& row : {QuantizeFp8TokenRow(y.data(), 128, Fp8Format::kE4m3fn),
                                  QuantizeFp8TokenRow(y.data(), 128, Fp8Format::kE4m3fnuz),
                                  QuantizeFp8TensorRow(y.data(), 128, Fp8Format::kE4m3fn, 0.05f),
                                  QuantizeNvfp4Row(y.data(), 128, global)}) {
    const QuantDiffSummary s = Compare(row, row, y, QuantTolerance::kStrict);
    EXPECT_TRUE(s.passed) << QuantSchemeName(row.scheme) << " " << s.first_bad;
    EXPECT_EQ(s.rule, QuantRule::kNone);
    EXPECT_EQ(s.code_mismatches, 0u);
    EXPECT_EQ(s.checked, 128u);
    EXPECT_EQ(s.max_dequant_err, s.expected_dequant_err);
  }
}

TEST(QuantDiff, CodeDistanceIsInValueOrderNotBits) {
  const std::vector<float> y = {0x1p-9f};
  const QuantizedRow want = QuantizeFp8TensorRow(y.data(), 1, Fp8Format::kE4m3fn, 1.0f);
  ASSERT_EQ(want.codes[0], 0x01);  // +2^-9
  QuantizedRow got = want;
  got.codes = {0x81};  // -2^-9: 128 apart in bits, two steps apart in value
  EXPECT_EQ(Compare(want, got, y, QuantTolerance::kStrict).max_code_distance, 2u);
  got.codes = {0x7f};  // NaN
  const QuantDiffSummary nan = Compare(want, got, y, QuantTolerance::kStrict);
  EXPECT_EQ(nan.max_code_distance, kNanCodeDistance);
  EXPECT_EQ(nan.nan_codes, 1u);
}

TEST(QuantDiff, StrictWantsExactCodesUlpAcceptsOneStepOnlyAtATieInT) {
  // 1.0625 is the midpoint of e4m3fn 1.0 (0x38) and 1.125 (0x39), and a bf16 number: with scale 1
  // the reference rounds the tie to the even 0x38, and 0x39 is the other side of the same tie.
  const std::vector<float> tie = {1.0625f};
  const QuantizedRow want = QuantizeFp8TensorRow(tie.data(), 1, Fp8Format::kE4m3fn, 1.0f);
  ASSERT_EQ(want.codes[0], 0x38);
  QuantizedRow got = want;
  got.codes = {0x39};
  const QuantDiffSummary strict = Compare(want, got, tie, QuantTolerance::kStrict);
  EXPECT_FALSE(strict.passed);
  EXPECT_EQ(strict.rule, QuantRule::kRounding);
  const QuantDiffSummary ulp = Compare(want, got, tie, QuantTolerance::kUlp);
  EXPECT_TRUE(ulp.passed) << ulp.first_bad;
  EXPECT_EQ(ulp.tolerated, 1u);
  // 1.03125 is no tie: one step off is a rounding error under both tolerances.
  const std::vector<float> near = {1.03125f};
  const QuantizedRow want_near = QuantizeFp8TensorRow(near.data(), 1, Fp8Format::kE4m3fn, 1.0f);
  got = want_near;
  got.codes = {0x39};
  const QuantDiffSummary off = Compare(want_near, got, near, QuantTolerance::kUlp);
  EXPECT_FALSE(off.passed);
  EXPECT_EQ(off.rule, QuantRule::kRounding);
}

TEST(QuantDiff, UlpAcceptsATieThatOnlyExistsOnceRoundedToT) {
  // scale 0.01: the 1.0 / 1.125 midpoint is y = 0.010625, not a bf16 number. Its bf16 rounding y
  // lands off the tie in fp32, yet a kernel that quantised its fp32 norm before rounding to bf16
  // could be on either side.
  const float scale = 0.01f;
  const std::vector<float> y = {RoundTo(DType::kBf16, 1.0625f * scale)};
  const QuantizedRow want = QuantizeFp8TensorRow(y.data(), 1, Fp8Format::kE4m3fn, scale);
  QuantizedRow got = want;
  got.codes = {static_cast<uint8_t>(want.codes[0] == 0x38 ? 0x39 : 0x38)};
  EXPECT_TRUE(Compare(want, got, y, QuantTolerance::kUlp).passed);
  EXPECT_FALSE(Compare(want, got, y, QuantTolerance::kStrict).passed);
  // Two steps are never accepted.
  got.codes = {static_cast<uint8_t>(want.codes[0] == 0x38 ? 0x3a : 0x36)};
  EXPECT_FALSE(Compare(want, got, y, QuantTolerance::kUlp).passed);
}

// +0 for -0 is accepted in both tolerances (the Lamport variants carry -0.0 as +0.0), counted
// as tolerated; a zero for the smallest subnormal is not.
TEST(QuantDiff, BothTolerancesTakeTheSignOfZeroAsOneValue) {
  const std::vector<float> y = {-0x1p-20f};
  const QuantizedRow want = QuantizeFp8TensorRow(y.data(), 1, Fp8Format::kE4m3fn, 1.0f);
  ASSERT_EQ(want.codes[0], 0x80);
  QuantizedRow got = want;
  got.codes = {0x00};
  for (QuantTolerance tol : {QuantTolerance::kStrict, QuantTolerance::kUlp}) {
    const QuantDiffSummary s = Compare(want, got, y, tol);
    EXPECT_TRUE(s.passed) << QuantToleranceName(tol);
    EXPECT_EQ(s.tolerated, 1u) << QuantToleranceName(tol);
  }
  got.codes = {0x81};
  EXPECT_FALSE(Compare(want, got, y, QuantTolerance::kStrict).passed);
}

TEST(QuantDiff, ScalesMustBeExactUnderBothTolerances) {
  const std::vector<float> y = RandomBf16Row(64, 2);
  const QuantizedRow want = QuantizeFp8TokenRow(y.data(), 64, Fp8Format::kE4m3fn);
  QuantizedRow got = want;
  got.scale = std::nextafter(want.scale, 1.0f);
  for (QuantTolerance tol : {QuantTolerance::kStrict, QuantTolerance::kUlp}) {
    const QuantDiffSummary s = Compare(want, got, y, tol);
    EXPECT_FALSE(s.passed);
    EXPECT_EQ(s.rule, QuantRule::kScale);
    EXPECT_EQ(s.scale_mismatches, 1u);
    EXPECT_GT(s.max_scale_rel_err, 0.0);
  }
}

TEST(QuantDiff, AShapeMismatchIsReportedNotRead) {
  const std::vector<float> y = RandomBf16Row(32, 3);
  const QuantizedRow want = QuantizeNvfp4Row(y.data(), 32, 10.0f);
  QuantizedRow got = want;
  got.block_scales.pop_back();
  const QuantDiffSummary s = Compare(want, got, y, QuantTolerance::kStrict);
  EXPECT_FALSE(s.passed);
  EXPECT_EQ(s.rule, QuantRule::kUnexplained);
  EXPECT_NE(s.first_bad.find("shape"), std::string::npos);
}

TEST(QuantDiff, DequantisedErrorIsMeasuredAgainstTheNorm) {
  const std::vector<float> y = {1.0f, 2.0f};
  const QuantizedRow want = QuantizeFp8TensorRow(y.data(), 2, Fp8Format::kE4m3fn, 1.0f);
  EXPECT_EQ(Compare(want, want, y, QuantTolerance::kStrict).expected_dequant_err, 0.0);
  QuantizedRow got = want;
  got.codes[1] = EncodeFp8(Fp8Format::kE4m3fn, 2.5f);
  const QuantDiffSummary s = Compare(want, got, y, QuantTolerance::kStrict);
  EXPECT_EQ(s.max_dequant_err, 0.5);
  EXPECT_EQ(s.rule, QuantRule::kUnexplained);  // 2 is exact: no rule gives 2.5
}

}  // namespace
}  // namespace colltest
