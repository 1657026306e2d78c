// Broken quantisers, each the kind of bug a kernel's epilogue can have: quant_diff must catch
// every one and name the rule it breaks.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "random_rows.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/fp4.h"
#include "worker/numerics/fp8.h"
#include "worker/numerics/quant_breaks.h"
#include "worker/numerics/quant_diff.h"
#include "worker/numerics/quant_epilogue.h"

namespace colltest {
namespace {

constexpr Fp8Format kFormats[] = {Fp8Format::kE4m3fn, Fp8Format::kE4m3fnuz};
constexpr uint32_t kN = 256;

// A broken row: the reference's scales, codes re-encoded from the reference's scaled values.
template <typename Encoder>
QuantizedRow Reencode(const QuantizedRow& want, const std::vector<float>& y, Encoder encode) {
  QuantizedRow got = want;
  for (uint32_t i = 0; i < got.codes.size(); ++i)
    got.codes[i] = encode(ScaledElement(want, y.data(), i));
  return got;
}

void ExpectCaught(const QuantDiffSummary& s, QuantRule rule) {
  EXPECT_FALSE(s.passed);
  EXPECT_EQ(s.rule, rule) << "named " << QuantRuleName(s.rule) << "; first bad: " << s.first_bad;
  EXPECT_FALSE(s.first_bad.empty());
}

QuantDiffSummary CompareBoth(const QuantizedRow& want, const QuantizedRow& got,
                             const std::vector<float>& y, QuantTolerance tol) {
  return CompareQuantizedRow(want, got, y.data(), kN, DType::kBf16, tol);
}

TEST(QuantMutation, TruncatingEncoderBreaksRounding) {
  const std::vector<float> y = RandomBf16Row(kN, 21);
  for (Fp8Format f : kFormats) {
    const QuantizedRow want = QuantizeFp8TokenRow(y.data(), kN, f);
    const QuantizedRow got = Reencode(want, y, [f](float x) { return TruncatingFp8(f, x); });
    for (QuantTolerance tol : {QuantTolerance::kStrict, QuantTolerance::kUlp}) {
      const QuantDiffSummary s = CompareBoth(want, got, y, tol);
      ExpectCaught(s, QuantRule::kRounding);
      EXPECT_GT(s.rounding_codes, 10u);
      EXPECT_EQ(s.max_code_distance, 1u);
    }
  }
}

TEST(QuantMutation, NonSaturatingEncoderBreaksSaturation) {
  const std::vector<float> y = RandomBf16Row(kN, 22);
  for (Fp8Format f : kFormats) {
    // A static scale a quarter of amax / fmax: about one element in five lands past the max.
    const float scale = AbsMax(y.data(), kN) / Fp8MaxFinite(f) / 4;
    const QuantizedRow want = QuantizeFp8TensorRow(y.data(), kN, f, scale);
    const QuantizedRow got = Reencode(want, y, [f](float x) { return NonSaturatingFp8(f, x); });
    for (QuantTolerance tol : {QuantTolerance::kStrict, QuantTolerance::kUlp}) {
      const QuantDiffSummary s = CompareBoth(want, got, y, tol);
      ExpectCaught(s, QuantRule::kSaturation);
      EXPECT_GT(s.saturation_codes, 0u);
      EXPECT_EQ(s.nan_codes, s.code_mismatches);
      EXPECT_EQ(s.max_code_distance, kNanCodeDistance);
    }
  }
}

TEST(QuantMutation, SwappedFnAndFnuzBreaksFormat) {
  const std::vector<float> y = RandomBf16Row(kN, 23);
  for (Fp8Format f : kFormats) {
    for (bool token : {true, false}) {
      const QuantizedRow want = token ? QuantizeFp8TokenRow(y.data(), kN, f)
                                      : QuantizeFp8TensorRow(y.data(), kN, f, 0.02f);
      const Fp8Format other = OtherFp8Format(f);
      const QuantizedRow got = Reencode(want, y, [other](float x) { return EncodeFp8(other, x); });
      const QuantDiffSummary s = CompareBoth(want, got, y, QuantTolerance::kStrict);
      ExpectCaught(s, QuantRule::kFormat);
      EXPECT_EQ(s.format_codes, s.code_mismatches);
    }
  }
}

TEST(QuantMutation, Nvfp4BlockOffsetByOneBlockBreaksScale) {
  std::vector<float> y = RandomBf16Row(kN, 24);
  for (uint32_t i = 0; i < kN; ++i) y[i] *= static_cast<float>(1 + (i / 16) % 4);  // uneven blocks
  const float global = Nvfp4GlobalScale(AbsMax(y.data(), kN));
  const QuantizedRow want = QuantizeNvfp4Row(y.data(), kN, global);
  const uint32_t blocks = kN / kNvfp4BlockElems;
  // (a) Block b scaled and quantised with block b + 1's amax: codes follow the scales written.
  QuantizedRow shifted = want;
  for (uint32_t b = 0; b < blocks; ++b) {
    const float* next = y.data() + ((b + 1) % blocks) * kNvfp4BlockElems;
    shifted.block_scales[b] = Nvfp4BlockScaleCode(AbsMax(next, kNvfp4BlockElems), global);
  }
  for (uint32_t i = 0; i < kN; ++i)
    shifted.codes[i] = EncodeE2m1(ScaledElement(shifted, y.data(), i));
  // (b) Right codes, each block's scale stored one slot on.
  QuantizedRow misplaced = want;
  for (uint32_t b = 0; b < blocks; ++b)
    misplaced.block_scales[(b + 1) % blocks] = want.block_scales[b];
  for (const QuantizedRow* got : {&shifted, &misplaced}) {
    for (QuantTolerance tol : {QuantTolerance::kStrict, QuantTolerance::kUlp}) {
      const QuantDiffSummary s = CompareBoth(want, *got, y, tol);
      ExpectCaught(s, QuantRule::kScale);
      EXPECT_GE(s.scale_mismatches, blocks / 2);  // neighbours may share a scale by chance
      EXPECT_EQ(s.codes_follow_actual_scales, got == &shifted);
    }
  }
}

TEST(QuantMutation, ScaleFromAPartialRowBreaksScale) {
  std::vector<float> y = RandomBf16Row(kN, 25);
  y[kN - 3] = 40.0f;  // the row's amax, in the half the broken kernel leaves out
  for (Fp8Format f : kFormats) {
    const QuantizedRow want = QuantizeFp8TokenRow(y.data(), kN, f);
    QuantizedRow got = want;
    got.scale = Fp8TokenScale(AbsMax(y.data(), kN / 2), Fp8MaxFinite(f));
    for (uint32_t i = 0; i < kN; ++i) got.codes[i] = EncodeFp8(f, ScaledElement(got, y.data(), i));
    for (QuantTolerance tol : {QuantTolerance::kStrict, QuantTolerance::kUlp}) {
      const QuantDiffSummary s = CompareBoth(want, got, y, tol);
      ExpectCaught(s, QuantRule::kScale);
      EXPECT_TRUE(s.codes_follow_actual_scales);
      EXPECT_GT(s.max_scale_rel_err, 0.5);
      EXPECT_GT(s.max_dequant_err, s.expected_dequant_err);  // the saturated 40
    }
  }
}

TEST(QuantMutation, QuantisingTheFp32NormBeforeRoundingToTPassesOnlyUnderUlp) {
  // Not a bug: the kernel quantises its fp32 norm instead of the bf16-rounded one. With a power of
  // two scale many bf16 values are exact e4m3 ties, which the fp32 value leaves on either side.
  std::mt19937 rng(26);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> y32(kN);
  std::vector<float> y(kN);
  for (uint32_t i = 0; i < kN; ++i) {
    y32[i] = normal(rng);
    y[i] = RoundTo(DType::kBf16, y32[i]);
  }
  for (Fp8Format f : kFormats) {
    const QuantizedRow want = QuantizeFp8TensorRow(y.data(), kN, f, 1.0f / 32);
    const QuantizedRow got = QuantizeFp8TensorRow(y32.data(), kN, f, 1.0f / 32);
    const QuantDiffSummary strict = CompareBoth(want, got, y, QuantTolerance::kStrict);
    EXPECT_FALSE(strict.passed);
    EXPECT_EQ(strict.rule, QuantRule::kRounding);
    const QuantDiffSummary ulp = CompareBoth(want, got, y, QuantTolerance::kUlp);
    EXPECT_TRUE(ulp.passed) << ulp.first_bad;
    EXPECT_EQ(ulp.tolerated, strict.code_mismatches);
  }
}

}  // namespace
}  // namespace colltest
