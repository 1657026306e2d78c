// The cpu kernels' row-quantising helper (worker/backends/cpu/quant_row.h) against the reference
// functions of worker/numerics/quant_epilogue.h: every bf16 and fp16 value, and random fp32 rows,
// give the same codes, packed bytes and scales under every scheme and format.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "worker/backends/cpu/quant_row.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/fp4.h"
#include "worker/numerics/fp8.h"
#include "worker/numerics/quant_breaks.h"
#include "worker/numerics/quant_epilogue.h"
#include "worker/numerics/quant_plan.h"

namespace colltest::cpu {
namespace {

// Rows of normed outputs as a kernel quantises them: already values of T.
std::vector<float> EveryValueOf(DType t) {
  std::vector<float> values;
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    values.push_back(t == DType::kBf16 ? Bf16ToFloat(static_cast<uint16_t>(bits))
                                       : Fp16ToFloat(static_cast<uint16_t>(bits)));
  }
  return values;
}

std::vector<float> RandomFp32Values(uint32_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> values(count);
  for (uint32_t i = 0; i < count; ++i) {
    // Every fourth value is any bit pattern (NaN, Inf and subnormals included).
    values[i] = i % 4 == 3 ? BitsToFloat(static_cast<uint32_t>(rng())) : normal(rng);
  }
  return values;
}

std::vector<QuantPlan> EveryPlan() {
  std::vector<QuantPlan> plans;
  for (Fp8Format f : {Fp8Format::kE4m3fn, Fp8Format::kE4m3fnuz}) {
    QuantPlan token;
    token.scheme = QuantScheme::kFp8Token;
    token.format = f;
    plans.push_back(token);
    for (float scale : {0.03125f, 0.05f, 3.0f}) {
      QuantPlan tensor = token;
      tensor.scheme = QuantScheme::kFp8Tensor;
      tensor.fp8_scale = scale;
      plans.push_back(tensor);
    }
  }
  for (float global : {256.0f, 1.7f}) {
    QuantPlan nvfp4;
    nvfp4.scheme = QuantScheme::kNvfp4;
    nvfp4.nvfp4_global_scale = global;
    plans.push_back(nvfp4);
  }
  return plans;
}

QuantizedRow Reference(const QuantPlan& plan, const float* y, uint32_t n) {
  switch (*plan.scheme) {
    case QuantScheme::kFp8Token:
      return QuantizeFp8TokenRow(y, n, plan.format);
    case QuantScheme::kFp8Tensor:
      return QuantizeFp8TensorRow(y, n, plan.format, plan.fp8_scale);
    case QuantScheme::kNvfp4:
      break;
  }
  return QuantizeNvfp4Row(y, n, plan.nvfp4_global_scale);
}

// Quantises `values` in rows of n with QuantizeRow and with the reference; the first difference.
std::string FirstDifference(const QuantPlan& plan, const std::vector<float>& values, uint32_t n) {
  const uint32_t m = static_cast<uint32_t>(values.size() / n);
  std::vector<uint8_t> codes(static_cast<size_t>(m) * QuantCodeBytesPerRow(plan, n), 0xaa);
  std::vector<float> row_scales(static_cast<size_t>(m) * QuantRowScalesPerRow(plan));
  std::vector<uint8_t> block_scales(static_cast<size_t>(m) * QuantBlockScalesPerRow(plan, n));
  const QuantOutputs out{&plan, codes.data(), row_scales.data(), block_scales.data(), false};
  for (uint32_t row = 0; row < m; ++row) QuantizeRow(out, row, values.data() + row * n, n);
  for (uint32_t row = 0; row < m; ++row) {
    const QuantizedRow want = Reference(plan, values.data() + row * n, n);
    const bool nvfp4 = *plan.scheme == QuantScheme::kNvfp4;
    const std::vector<uint8_t> want_bytes = nvfp4 ? PackNvfp4(want.codes) : want.codes;
    const uint32_t bytes = QuantCodeBytesPerRow(plan, n);
    for (uint32_t b = 0; b < bytes; ++b) {
      if (codes[row * bytes + b] != want_bytes[b]) {
        return "row " + std::to_string(row) + " code byte " + std::to_string(b);
      }
    }
    if (*plan.scheme == QuantScheme::kFp8Token &&
        FloatBits(row_scales[row]) != FloatBits(want.scale)) {
      return "row " + std::to_string(row) + " scale";
    }
    const uint32_t blocks = QuantBlockScalesPerRow(plan, n);
    for (uint32_t b = 0; b < blocks; ++b) {
      if (block_scales[row * blocks + b] != want.block_scales[b]) {
        return "row " + std::to_string(row) + " block scale " + std::to_string(b);
      }
    }
  }
  return "";
}

TEST(CpuQuantRow, EveryBf16AndFp16ValueMatchesTheReference) {
  for (DType t : {DType::kBf16, DType::kFp16}) {
    const std::vector<float> values = EveryValueOf(t);
    // 256: whole blocks; 40: a short last block; 37: an odd row, the last byte half empty.
    for (uint32_t n : {256u, 40u, 37u}) {
      for (const QuantPlan& plan : EveryPlan()) {
        EXPECT_EQ(FirstDifference(plan, values, n), "")
            << DTypeName(t) << " n = " << n << " " << QuantSchemeName(*plan.scheme) << " "
            << Fp8FormatName(plan.format) << " scale " << plan.fp8_scale << " global "
            << plan.nvfp4_global_scale;
      }
    }
  }
}

TEST(CpuQuantRow, RandomFp32RowsMatchTheReference) {
  const std::vector<float> values = RandomFp32Values(64 * 264, 7);
  for (uint32_t n : {264u, 16u}) {
    for (const QuantPlan& plan : EveryPlan()) {
      EXPECT_EQ(FirstDifference(plan, values, n), "")
          << "n = " << n << " " << QuantSchemeName(*plan.scheme) << " "
          << Fp8FormatName(plan.format);
    }
  }
}

TEST(CpuQuantRow, NothingIsWrittenWithoutAScheme) {
  QuantPlan none;
  std::vector<uint8_t> codes(16, 0xaa);
  const float y[16] = {1.0f};
  QuantizeRow(QuantOutputs{&none, codes.data(), nullptr, nullptr, 2}, 0, y, 16);
  QuantizeRow(QuantOutputs{}, 0, y, 16);
  for (uint8_t c : codes) EXPECT_EQ(c, 0xaa);
}

// The test-only break rounds toward zero: never a larger magnitude than the scaled value, and
// some codes differ from round-to-nearest-even.
TEST(CpuQuantRow, TruncateBreakRoundsTowardZero) {
  QuantPlan plan;
  plan.scheme = QuantScheme::kFp8Tensor;
  plan.fp8_scale = 1.0f;
  plan.breaks = kQuantBreakTruncate;
  for (Fp8Format f : {Fp8Format::kE4m3fn, Fp8Format::kE4m3fnuz}) {
    plan.format = f;
    const std::vector<float> y = RandomFp32Values(256, 3);
    std::vector<uint8_t> codes(256);
    QuantizeRow(QuantOutputs{&plan, codes.data(), nullptr, nullptr, 2}, 0, y.data(), 256);
    uint32_t changed = 0;
    for (uint32_t j = 0; j < 256; ++j) {
      if (std::isnan(y[j])) continue;
      EXPECT_FALSE(Fp8IsNan(f, codes[j])) << j;
      EXPECT_LE(std::fabs(DecodeFp8(f, codes[j])), std::fabs(y[j])) << j;
      changed += codes[j] != EncodeFp8(f, y[j]);
    }
    EXPECT_GT(changed, 0u);
  }
}

}  // namespace
}  // namespace colltest::cpu
