#include "worker/numerics/quant_epilogue.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/fp4.h"
#include "worker/numerics/fp8.h"
#include "worker/numerics/reference.h"

namespace colltest {
namespace {

std::vector<float> RandomBf16Row(uint32_t n, uint32_t seed, float spread = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> y(n);
  for (float& v : y) v = RoundTo(DType::kBf16, normal(rng));
  return y;
}

TEST(QuantEpilogueFp8Token, ScaleIsAmaxOverFmaxAndCodesAreYOverScale) {
  const std::vector<float> y = {3.5f, -7.0f, 1.0f, 0.0f};
  const QuantizedRow fn = QuantizeFp8TokenRow(y.data(), 4, Fp8Format::kE4m3fn);
  EXPECT_EQ(fn.scale, 7.0f / 448.0f);  // 2^-6
  // 3.5 / 2^-6 = 224, -7 / 2^-6 = -448 (the largest finite), 1 / 2^-6 = 64.
  EXPECT_EQ(fn.codes, (std::vector<uint8_t>{0x76, 0xfe, 0x68, 0x00}));
  const QuantizedRow fnuz = QuantizeFp8TokenRow(y.data(), 4, Fp8Format::kE4m3fnuz);
  EXPECT_EQ(fnuz.scale, 7.0f / 240.0f);
  EXPECT_EQ(fnuz.codes[1], 0xff);  // -240
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(fnuz.codes[i], EncodeFp8(Fp8Format::kE4m3fnuz, y[i] / fnuz.scale));
  }
}

TEST(QuantEpilogueFp8Token, CodesDivideByTheScale) {
  // amax 3 makes the scale 3 / 448, no power of two; the values next to tie * scale are where
  // dividing and multiplying by fp32(1 / scale) part.
  std::vector<float> y = {3.0f};
  const float scale = 3.0f / 448.0f;
  for (uint8_t code = 0x30; code < 0x70; ++code) {
    const float tie = (DecodeFp8(Fp8Format::kE4m3fn, code) +
                       DecodeFp8(Fp8Format::kE4m3fn, static_cast<uint8_t>(code + 1))) /
                      2;
    float v = std::nextafter(tie * scale, 0.0f);
    for (int step = 0; step < 3; ++step, v = std::nextafter(v, 1e9f)) y.push_back(v);
  }
  const QuantizedRow row =
      QuantizeFp8TokenRow(y.data(), static_cast<uint32_t>(y.size()), Fp8Format::kE4m3fn);
  ASSERT_EQ(row.scale, scale);
  int differing = 0;
  for (uint32_t i = 0; i < y.size(); ++i) {
    EXPECT_EQ(row.codes[i], EncodeFp8(Fp8Format::kE4m3fn, y[i] / scale)) << y[i];
    differing += row.codes[i] != EncodeFp8(Fp8Format::kE4m3fn, y[i] * (1.0f / scale));
  }
  EXPECT_GT(differing, 0);
}

TEST(QuantEpilogueFp8Token, FmaxCanBeSetAsVllmDoesForFnuz) {
  const std::vector<float> y = {224.0f, -1.0f};
  const QuantizedRow row = QuantizeFp8TokenRow(y.data(), 2, Fp8Format::kE4m3fnuz, 224.0f);
  EXPECT_EQ(row.scale, 1.0f);
  EXPECT_EQ(row.codes[0], EncodeFp8(Fp8Format::kE4m3fnuz, 224.0f));
}

TEST(QuantEpilogueFp8Token, AllZeroRowGetsTheMinimumScaleNotNan) {
  const std::vector<float> zeros(64, 0.0f);
  for (Fp8Format f : {Fp8Format::kE4m3fn, Fp8Format::kE4m3fnuz}) {
    const QuantizedRow row = QuantizeFp8TokenRow(zeros.data(), 64, f);
    EXPECT_EQ(row.scale, 1.0f / (Fp8MaxFinite(f) * 512.0f)) << Fp8FormatName(f);
    EXPECT_GT(row.scale, 0.0f);
    for (uint8_t c : row.codes) EXPECT_EQ(c, 0x00);
  }
  // FlashInfer writes its floor as 2^-9 / 448: the same fp32 number.
  EXPECT_EQ(Fp8TokenMinScale(448.0f), (1.0f / 512.0f) / 448.0f);
}

TEST(QuantEpilogueFp8Token, ANanElementDoesNotMoveTheScale) {
  std::vector<float> y = {1.0f, -2.0f, std::nanf("")};
  const QuantizedRow row = QuantizeFp8TokenRow(y.data(), 3, Fp8Format::kE4m3fn);
  EXPECT_EQ(row.scale, 2.0f / 448.0f);
  EXPECT_EQ(row.codes[2], 0x7f);
}

TEST(QuantEpilogueFp8Tensor, CodesAreYTimesTheReciprocalOfTheScale) {
  // Inputs where multiplying by fp32(1 / scale) and dividing by the scale give different codes,
  // so that the rule is tested where it matters: the floats next to tie * scale.
  const float scale = 0.3f;
  const float inverse = 1.0f / scale;
  std::vector<float> y;
  for (uint8_t code = 0x30; code < 0x50; ++code) {
    const float tie = (DecodeFp8(Fp8Format::kE4m3fn, code) +
                       DecodeFp8(Fp8Format::kE4m3fn, static_cast<uint8_t>(code + 1))) /
                      2;
    float v = std::nextafter(tie * scale, 0.0f);
    for (int step = 0; step < 3; ++step, v = std::nextafter(v, 1e9f)) {
      if (EncodeFp8(Fp8Format::kE4m3fn, v * inverse) != EncodeFp8(Fp8Format::kE4m3fn, v / scale)) {
        y.push_back(v);
      }
    }
  }
  ASSERT_FALSE(y.empty());
  const QuantizedRow row =
      QuantizeFp8TensorRow(y.data(), static_cast<uint32_t>(y.size()), Fp8Format::kE4m3fn, scale);
  EXPECT_EQ(row.scale, scale);
  for (uint32_t i = 0; i < y.size(); ++i) {
    EXPECT_EQ(row.codes[i], EncodeFp8(Fp8Format::kE4m3fn, y[i] * inverse)) << y[i];
  }
}

TEST(QuantEpilogueFp8Tensor, ValuesPastTheLargestFiniteSaturate) {
  const std::vector<float> y = {10.0f, -10.0f};
  const QuantizedRow row = QuantizeFp8TensorRow(y.data(), 2, Fp8Format::kE4m3fnuz, 1.0f / 64);
  EXPECT_EQ(row.codes, (std::vector<uint8_t>{0x7f, 0xff}));
}

TEST(QuantEpilogueNvfp4, OneBlockByHand) {
  std::vector<float> y(16);
  for (uint32_t i = 0; i < 16; ++i) y[i] = 0.25f * static_cast<float>(i);  // amax 3.75
  const QuantizedRow row = QuantizeNvfp4Row(y.data(), 16, 1.0f);
  // sf = e4m3(1 * (3.75 * fp32(1/6))) = 0.625 (0x32); out = 1 / 0.625 = 1.6; code = E2M1(y * 1.6)
  ASSERT_EQ(row.block_scales.size(), 1u);
  EXPECT_EQ(row.block_scales[0], 0x32);
  // y * 1.6 = 0 .4 .8 1.2 1.6 2 2.4 2.8 3.2 3.6 4 4.4 4.8 5.2 5.6 6
  EXPECT_EQ(row.codes, (std::vector<uint8_t>{0, 1, 2, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 7}));
}

TEST(QuantEpilogueNvfp4, BlockScaleIsGlobalTimesAmaxTimesFp32Sixth) {
  // Block amaxes whose scale lands next to an e4m3 tie, where (global * amax) / 6 and the
  // FlashInfer order global * (amax * fp32(1/6)) can give different codes.
  const float global = 1000.0f;
  int differing = 0;
  for (uint8_t code = 0x30; code < 0x70; ++code) {
    const float tie = (DecodeFp8(Fp8Format::kE4m3fn, code) +
                       DecodeFp8(Fp8Format::kE4m3fn, static_cast<uint8_t>(code + 1))) /
                      2;
    float amax = std::nextafter(tie * 6.0f / global, 0.0f);
    for (int step = 0; step < 3; ++step, amax = std::nextafter(amax, 1e9f)) {
      std::vector<float> y(16, 0.0f);
      y[5] = -amax;
      const QuantizedRow row = QuantizeNvfp4Row(y.data(), 16, global);
      EXPECT_EQ(row.block_scales[0], EncodeFp8(Fp8Format::kE4m3fn, global * (amax * (1.0f / 6))));
      differing += row.block_scales[0] != EncodeFp8(Fp8Format::kE4m3fn, global * amax / 6.0f);
    }
  }
  EXPECT_GT(differing, 0);
}

TEST(QuantEpilogueNvfp4, OutputScaleIsGlobalDividedByTheBlockScale) {
  int differing = 0;
  for (float global : {1000.0f, 2688.0f / 3.7f, 77.7f}) {
    EXPECT_EQ(Nvfp4OutputScale(0x00, global), 0.0f);  // a zero block scale zeroes the block
    for (uint8_t code = 0x01; code <= 0x7e; ++code) {
      const float sf = DecodeFp8(Fp8Format::kE4m3fn, code);
      EXPECT_EQ(Nvfp4OutputScale(code, global), global / sf) << int(code);
      differing += Nvfp4OutputScale(code, global) != global * (1.0f / sf);
    }
  }
  EXPECT_GT(differing, 0);
}

TEST(QuantEpilogueNvfp4, CodesAreYTimesTheOutputScale) {
  // One block per E2M1 tie, holding the floats next to tie / out, where y * out and
  // (y * global) / sf part.
  const float global = 1000.0f;
  const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  std::vector<float> y;
  for (float tie : ties) {
    std::vector<float> block(16, 0.0f);
    block[0] = 4.3f / global;  // the block amax: sf = e4m3(4.3 / 6) = 0.6875, no power of two
    const float out = Nvfp4OutputScale(Nvfp4BlockScaleCode(block[0], global), global);
    float v = std::nextafter(std::nextafter(tie / out, 0.0f), 0.0f);
    for (int k = 1; k < 6; ++k, v = std::nextafter(v, 1e9f)) block[k] = v;
    y.insert(y.end(), block.begin(), block.end());
  }
  const QuantizedRow row = QuantizeNvfp4Row(y.data(), static_cast<uint32_t>(y.size()), global);
  int differing = 0;
  for (uint32_t i = 0; i < y.size(); ++i) {
    const float sf = DecodeFp8(Fp8Format::kE4m3fn, row.block_scales[i / 16]);
    EXPECT_EQ(row.codes[i], EncodeE2m1(y[i] * (global / sf))) << i;
    differing += row.codes[i] != EncodeE2m1((y[i] * global) / sf);
  }
  EXPECT_GT(differing, 0);
}

TEST(QuantEpilogueNvfp4, TheLargestBlockScaleLandsOn448) {
  const std::vector<float> y = RandomBf16Row(256, 11);
  const float global = Nvfp4GlobalScale(AbsMax(y.data(), y.size()));
  EXPECT_EQ(global, 2688.0f / AbsMax(y.data(), y.size()));
  const QuantizedRow row = QuantizeNvfp4Row(y.data(), 256, global);
  ASSERT_EQ(row.block_scales.size(), 16u);
  uint8_t largest = 0;
  for (uint8_t sf : row.block_scales) largest = sf > largest ? sf : largest;
  EXPECT_EQ(largest, 0x7e);  // 448
  for (uint32_t i = 0; i < 256; ++i) {
    if (std::fabs(y[i]) == AbsMax(y.data(), y.size())) {
      EXPECT_EQ(row.codes[i] & 0x7, 0x7);  // 6
    }
    const float out = global / DecodeFp8(Fp8Format::kE4m3fn, row.block_scales[i / 16]);
    EXPECT_EQ(row.codes[i], EncodeE2m1(y[i] * out)) << i;
  }
}

TEST(QuantEpilogueNvfp4, AllZeroTensorGetsGlobalOneAndZeroCodes) {
  const std::vector<float> zeros(32, 0.0f);
  const float global = Nvfp4GlobalScale(AbsMax(zeros.data(), zeros.size()));
  EXPECT_EQ(global, 1.0f);
  const QuantizedRow row = QuantizeNvfp4Row(zeros.data(), 32, global);
  EXPECT_EQ(row.block_scales, (std::vector<uint8_t>{0, 0}));
  for (uint8_t c : row.codes) EXPECT_EQ(c, 0);
}

TEST(QuantEpilogueNvfp4, AShortLastBlockScalesOverItsOwnElements) {
  std::vector<float> y(20, 0.5f);
  y[17] = 3.0f;
  const QuantizedRow row = QuantizeNvfp4Row(y.data(), 20, 1.0f);
  ASSERT_EQ(row.block_scales.size(), 2u);
  EXPECT_EQ(row.block_scales[0], Nvfp4BlockScaleCode(0.5f, 1.0f));
  EXPECT_EQ(row.block_scales[1], Nvfp4BlockScaleCode(3.0f, 1.0f));
}

TEST(QuantEpilogue, TheReferenceIsDeterministic) {
  const std::vector<float> y = RandomBf16Row(512, 5);
  for (int k = 0; k < 2; ++k) {
    const QuantizedRow a = QuantizeFp8TokenRow(y.data(), 512, Fp8Format::kE4m3fn);
    const QuantizedRow b = QuantizeFp8TokenRow(y.data(), 512, Fp8Format::kE4m3fn);
    EXPECT_EQ(a.codes, b.codes);
    EXPECT_EQ(std::memcmp(&a.scale, &b.scale, sizeof a.scale), 0);
    const QuantizedRow c = QuantizeNvfp4Row(y.data(), 512, 100.0f);
    const QuantizedRow d = QuantizeNvfp4Row(y.data(), 512, 100.0f);
    EXPECT_EQ(c.codes, d.codes);
    EXPECT_EQ(c.block_scales, d.block_scales);
  }
}

TEST(QuantEpilogue, QuantisesTheReferenceNormWithinHalfAStep) {
  CaseShape shape;
  shape.n = 1024;
  const ReferenceRows ref = ComputeReference(shape, 0);
  const float* y = ref.out.data();
  for (Fp8Format f : {Fp8Format::kE4m3fn, Fp8Format::kE4m3fnuz}) {
    const QuantizedRow row = QuantizeFp8TokenRow(y, shape.n, f);
    for (uint32_t i = 0; i < shape.n; ++i) {
      // Half a step of 3 mantissa bits relative, or half the smallest subnormal step.
      const double bound = std::fabs(y[i]) / 16 + Pow2(-Fp8Layout(f).bias - 3) * row.scale;
      EXPECT_LE(std::fabs(DequantizeElement(row, i) - y[i]), bound) << i;
    }
  }
  const QuantizedRow nv = QuantizeNvfp4Row(y, shape.n, Nvfp4GlobalScale(AbsMax(y, shape.n)));
  for (uint32_t i = 0; i < shape.n; ++i) EXPECT_TRUE(std::isfinite(DequantizeElement(nv, i)));
}

}  // namespace
}  // namespace colltest
