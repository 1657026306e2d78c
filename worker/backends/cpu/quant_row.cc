#include "worker/backends/cpu/quant_row.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "worker/numerics/fp4.h"
#include "worker/numerics/fp8.h"
#include "worker/numerics/quant_breaks.h"
#include "worker/numerics/quant_epilogue.h"
#include "worker/numerics/quant_plan.h"

namespace colltest::cpu {
namespace {

void QuantizeFp8Token(const QuantOutputs& o, uint32_t row, const float* y, uint32_t n) {
  const Fp8Format format = o.plan->format;
  const uint32_t breaks = o.plan->breaks;
  float amax = 0.0f;
  for (uint32_t j = 0; j < AmaxColumns(breaks, n, o.world); ++j) amax = AbsMaxStep(amax, y[j]);
  const float scale = Fp8TokenScale(amax, Fp8MaxFinite(format));
  o.row_scales[row] = scale;
  uint8_t* codes = o.codes + static_cast<size_t>(row) * n;
  for (uint32_t j = 0; j < n; ++j) {
    codes[j] = EpilogueEncodeFp8(format, Fp8TokenScaled(y[j], scale), breaks);
  }
}

void QuantizeFp8Tensor(const QuantOutputs& o, uint32_t row, const float* y, uint32_t n) {
  const float inverse = Fp8TensorInverse(o.plan->fp8_scale);
  uint8_t* codes = o.codes + static_cast<size_t>(row) * n;
  for (uint32_t j = 0; j < n; ++j) {
    codes[j] = EpilogueEncodeFp8(o.plan->format, Fp8TensorScaled(y[j], inverse), o.plan->breaks);
  }
}

// Blocks of 16 along the row, each with its own e4m3fn scale; codes two a byte, the earlier
// element low. A block starts at an even element, so a byte never straddles two blocks. The scales
// come first, so that the planted block-offset break can scale a block with its predecessor's.
void QuantizeNvfp4(const QuantOutputs& o, uint32_t row, const float* y, uint32_t n) {
  const float global = o.plan->nvfp4_global_scale;
  const uint32_t breaks = o.plan->breaks;
  uint8_t* packed = o.codes + static_cast<size_t>(row) * QuantCodeBytesPerRow(*o.plan, n);
  uint8_t* block_scales =
      o.block_scales + static_cast<size_t>(row) * QuantBlockScalesPerRow(*o.plan, n);
  for (uint32_t begin = 0; begin < n; begin += kNvfp4BlockElems) {
    const uint32_t end = std::min(begin + kNvfp4BlockElems, n);
    float amax = 0.0f;
    for (uint32_t j = begin; j < end; ++j) amax = AbsMaxStep(amax, y[j]);
    block_scales[begin / kNvfp4BlockElems] = Nvfp4BlockScaleCode(amax, global);
  }
  for (uint32_t begin = 0; begin < n; begin += kNvfp4BlockElems) {
    const uint32_t end = std::min(begin + kNvfp4BlockElems, n);
    const uint32_t block = ScaleBlockOf(breaks, begin / kNvfp4BlockElems);
    const float out_scale = Nvfp4OutputScale(block_scales[block], global);
    for (uint32_t j = begin; j < end; j += 2) {
      const uint8_t low = EpilogueEncodeE2m1(Nvfp4Scaled(y[j], out_scale), breaks);
      const uint8_t high =
          j + 1 < end ? EpilogueEncodeE2m1(Nvfp4Scaled(y[j + 1], out_scale), breaks) : 0;
      packed[j / 2] = PackE2m1Pair(low, high);
    }
  }
}

}  // namespace

void QuantizeRow(const QuantOutputs& out, uint32_t row, const float* y, uint32_t n) {
  if (!out.active()) return;
  switch (*out.plan->scheme) {
    case QuantScheme::kFp8Token:
      QuantizeFp8Token(out, row, y, n);
      break;
    case QuantScheme::kFp8Tensor:
      QuantizeFp8Tensor(out, row, y, n);
      break;
    case QuantScheme::kNvfp4:
      QuantizeNvfp4(out, row, y, n);
      break;
  }
}

}  // namespace colltest::cpu
