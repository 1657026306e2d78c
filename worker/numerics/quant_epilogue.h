// The quantising epilogues after the norm (docs/quantisation.md): the reference of what a fused
// all-reduce + residual + RMSNorm + quant kernel must write for one row of the normed output y.
// y is the norm output as the kernel quantises it, i.e. already rounded to T (the reference's
// `out` row): FlashInfer's FusedOp quantises the T-typed value rms_norm() returns.
// The per-element formulas are COLLTEST_HD so that kernels evaluate the very same fp32
// operations, in the same order; every step below is one IEEE fp32 operation, rounded to nearest.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "worker/numerics/fp4.h"
#include "worker/numerics/fp8.h"
#include "worker/numerics/host_device.h"

namespace colltest {

enum class QuantScheme : uint8_t { kFp8Token, kFp8Tensor, kNvfp4 };
const char* QuantSchemeName(QuantScheme s);

// One step of an absolute-maximum reduction from 0: fmaxf ignores a NaN operand, as the kernels'
// reductions do, so a NaN element does not poison the scale (it still encodes to a NaN code).
COLLTEST_HD float AbsMaxStep(float acc, float v) { return fmaxf(acc, fabsf(v)); }

// fp8_token (per-token dynamic FP8; FlashInfer's kARResidualRMSNormDynamicFP8Quant, vLLM's
// dynamic_per_token_scaled_fp8_quant):
//   scale = max(amax / fmax, 1 / (fmax * 512))      fp32 division, then the floor
//   code  = E(y / scale)                             fp32 division, then the saturating encoder
// The floor is vLLM's min_scaling_factor (FlashInfer's kDynamicFP8MinScale = 2^-9 / 448, the same
// fp32 number for fmax 448): an all-zero row gets that scale and zero codes, never 0/0. fmax is
// the format's largest finite unless the caller asks otherwise (vLLM uses 224 for fnuz).
COLLTEST_HD float Fp8TokenMinScale(float fmax) { return 1.0f / (fmax * 512.0f); }
COLLTEST_HD float Fp8TokenScale(float amax, float fmax) {
  return fmaxf(amax / fmax, Fp8TokenMinScale(fmax));
}
COLLTEST_HD float Fp8TokenScaled(float y, float scale) { return y / scale; }

// fp8_tensor (static per-tensor FP8; FlashInfer's kARResidualRMSNormFP8Quant, vLLM's
// static_scaled_fp8_quant): the scale is given, and both libraries multiply by its fp32
// reciprocal rather than divide:
//   inverse = 1 / scale;  code = E(y * inverse)
// The scale must be positive and finite.
COLLTEST_HD float Fp8TensorInverse(float scale) { return 1.0f / scale; }
COLLTEST_HD float Fp8TensorScaled(float y, float inverse) { return y * inverse; }

// nvfp4 (FlashInfer's kARResidualRMSNormFP4Quant, cvt_warp_fp16_to_fp4 in
// include/flashinfer/comm/trtllm_allreduce_fusion.cuh), blocks of 16 along the row:
//   global  = (448 * 6) / amax_tensor                     one fp32 per tensor, given
//   sf      = e4m3fn(global * (amax_block * fp32(1/6)))   stored per block; saturates at 448
//   out     = decode(sf) != 0 ? global / decode(sf) : 0   fp32 division
//   code    = E2M1(y * out)
// TensorRT-LLM's older form computes `out` with two rcp.approx.ftz, which is not reproducible
// bit for bit; FlashInfer's exact division is.
constexpr uint32_t kNvfp4BlockElems = 16;
// What one row of n elements stores: packed E2M1 codes (two a byte) and block scales (the last
// block may be short).
COLLTEST_HD uint32_t Nvfp4RowBytes(uint32_t n) { return (n + 1) / 2; }
COLLTEST_HD uint32_t Nvfp4RowBlocks(uint32_t n) {
  return (n + kNvfp4BlockElems - 1) / kNvfp4BlockElems;
}
constexpr float kNvfp4GlobalNumerator = 448.0f * 6.0f;
constexpr float kReciprocalOf6 = 1.0f / 6.0f;

// The global scale from the tensor's amax. An all-zero tensor gets 1: every block amax is then
// 0, so the block scales and codes are 0 whatever the global scale, and 2688 / 0 would be Inf.
COLLTEST_HD float Nvfp4GlobalScale(float tensor_amax) {
  return tensor_amax > 0.0f ? kNvfp4GlobalNumerator / tensor_amax : 1.0f;
}
COLLTEST_HD uint8_t Nvfp4BlockScaleCode(float block_amax, float global) {
  return EncodeFp8(Fp8Format::kE4m3fn, global * (block_amax * kReciprocalOf6));
}
COLLTEST_HD float Nvfp4OutputScale(uint8_t block_scale_code, float global) {
  const float sf = DecodeFp8(Fp8Format::kE4m3fn, block_scale_code);
  return sf != 0.0f ? global / sf : 0.0f;
}
COLLTEST_HD float Nvfp4Scaled(float y, float output_scale) { return y * output_scale; }

// One quantised row. Element codes are kept one per element; PackNvfp4 gives the stored bytes.
struct QuantizedRow {
  QuantScheme scheme = QuantScheme::kFp8Token;
  Fp8Format format = Fp8Format::kE4m3fn;  // element format of the fp8 schemes
  std::vector<uint8_t> codes;             // fp8 code or E2M1 nibble, one per element
  // fp8 schemes: y ~ decode(code) * scale. nvfp4: the global scale, y ~ E2M1 * decode(sf) / scale.
  float scale = 0.0f;
  // nvfp4: one e4m3fn code per block of 16 (the last block may be short).
  std::vector<uint8_t> block_scales;
};

// `fmax` 0 means the format's largest finite.
QuantizedRow QuantizeFp8TokenRow(const float* y, uint32_t n, Fp8Format format, float fmax = 0);
QuantizedRow QuantizeFp8TensorRow(const float* y, uint32_t n, Fp8Format format, float scale);
QuantizedRow QuantizeNvfp4Row(const float* y, uint32_t n, float global_scale);

// amax over any run of values (a row, or all rows of a tensor for the nvfp4 global scale).
float AbsMax(const float* y, uint64_t count);

// Element i of the row scaled into code units with the row's own scales, by the formulas above;
// the code the reference stores is EncodeElement(row, ScaledElement(row, y, i)).
float ScaledElement(const QuantizedRow& row, const float* y, uint32_t i);
uint8_t EncodeElement(const QuantizedRow& row, float scaled);
// The value a code stands for in code units (NaN for an fp8 NaN code), and that value times the
// row's scales, back in y's units.
float DecodeElement(const QuantizedRow& row, uint8_t code);
double DequantizeElement(const QuantizedRow& row, uint32_t i);

// NVFP4's stored bytes: two codes a byte, the earlier element in the low nibble; an odd tail
// leaves the high nibble 0.
std::vector<uint8_t> PackNvfp4(const std::vector<uint8_t>& codes);
std::vector<uint8_t> UnpackNvfp4(const std::vector<uint8_t>& packed, uint32_t n);

}  // namespace colltest
