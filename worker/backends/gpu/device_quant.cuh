// The quantising epilogue every variant's norm ends with (docs/quantisation.md): the T-rounded
// normed row, held by the block as packs (pack k by thread k % blockDim.x), becomes FP8 codes with
// a per-row or per-tensor scale, or NVFP4 codes with e4m3fn block scales. Every element goes
// through the COLLTEST_HD formulas of worker/numerics/quant_epilogue.h, the same fp32 operations
// in the same order as the cpu specification and the reference, and through the planted breaks of
// quant_breaks.h (0 outside tests).
#pragma once

#include <cstdint>

#include "worker/backends/gpu/device_elem.cuh"
#include "worker/backends/gpu/device_reduce.cuh"
#include "worker/backends/gpu/kernels.h"
#include "worker/numerics/quant_breaks.h"
#include "worker/numerics/quant_epilogue.h"

namespace colltest::gpu {

// Lanes that hold the packs of one nvfp4 block of 16 elements: 2 for 16-bit T, 4 for fp32.
template <DType D>
inline constexpr uint32_t kLanesPerFp4Block = kNvfp4BlockElems / kPackElems<D>;

// The max of v over the kLanesPerFp4Block<D> neighbouring lanes that hold one block (packs k of a
// block sit in consecutive lanes: k = threadIdx.x + i * blockDim.x, blockDim.x a multiple of 4).
// Every lane of the warp must call it.
template <DType D>
__device__ __forceinline__ float Fp4BlockMax(float v) {
  for (uint32_t o = 1; o < kLanesPerFp4Block<D>; o *= 2)
    v = fmaxf(v, ShflXor(v, static_cast<int>(o)));
  return v;
}

// The v of the lane kLanesPerFp4Block<D> below, which holds the same position of the previous
// block (kQuantBreakBlockOffset); the first lanes of the warp keep their own. Every lane of the
// warp must call it.
template <DType D>
__device__ __forceinline__ float FromPreviousFp4Block(float v) {
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  const int from =
      lane >= static_cast<int>(kLanesPerFp4Block<D>) ? lane - kLanesPerFp4Block<D> : lane;
  return ShflFrom(v, from);
}

// Writes the E codes of pack k of row `row` (fp8: one byte each; nvfp4: two a byte).
template <DType D>
__device__ __forceinline__ void StoreFp8Codes(const QuantArgs& q, uint32_t row, uint32_t n,
                                              uint32_t k, const uint8_t (&c)[kPackElems<D>]) {
  constexpr uint32_t E = kPackElems<D>;
  uint8_t* dst = q.codes + static_cast<size_t>(row) * n + static_cast<size_t>(k) * E;
#pragma unroll
  for (uint32_t e = 0; e < E; ++e) dst[e] = c[e];
}

template <DType D>
__device__ __forceinline__ void StoreFp4Codes(const QuantArgs& q, uint32_t row, uint32_t n,
                                              uint32_t k, const uint8_t (&c)[kPackElems<D>]) {
  constexpr uint32_t E = kPackElems<D>;
  uint8_t* dst =
      q.codes + static_cast<size_t>(row) * Nvfp4RowBytes(n) + static_cast<size_t>(k) * E / 2;
#pragma unroll
  for (uint32_t e = 0; e < E; e += 2) dst[e / 2] = PackE2m1Pair(c[e], c[e + 1]);
}

// The fp8 codes of every pack the thread holds: `scaled(y)` takes an element into code units.
template <DType D, class YOf, class Scaled>
__device__ __forceinline__ void EncodeFp8Row(const QuantArgs& q, uint32_t row, uint32_t n,
                                             YOf&& y_of, Scaled&& scaled) {
  constexpr uint32_t E = kPackElems<D>;
  const uint32_t ppr = n / E;
  for (uint32_t k = threadIdx.x; k < ppr; k += blockDim.x) {
    float y[E];
    uint8_t c[E];
    Unpack<D>(y_of(k), y);
#pragma unroll
    for (uint32_t e = 0; e < E; ++e) c[e] = EpilogueEncodeFp8(q.format, scaled(y[e]), q.breaks);
    StoreFp8Codes<D>(q, row, n, k, c);
  }
}

// fp8_token: amax over the row (or, broken, over the part before the last rank's chunk), the
// row's scale, then the codes. `y_of(k)` yields the T-rounded normed pack k.
template <DType D, class YOf>
__device__ __forceinline__ void QuantizeFp8TokenRow(const QuantArgs& q, uint32_t row, uint32_t n,
                                                    YOf&& y_of) {
  constexpr uint32_t E = kPackElems<D>;
  const uint32_t ppr = n / E;
  const uint32_t amax_cols = AmaxColumns(q.breaks, n, q.world);
  float amax = 0.f;
  for (uint32_t k = threadIdx.x; k < ppr; k += blockDim.x) {
    float y[E];
    Unpack<D>(y_of(k), y);
#pragma unroll
    for (uint32_t e = 0; e < E; ++e) {
      if (k * E + e < amax_cols) amax = AbsMaxStep(amax, y[e]);
    }
  }
  const float scale = Fp8TokenScale(BlockMax(amax), Fp8MaxFinite(q.format));
  if (threadIdx.x == 0) q.row_scales[row] = scale;
  EncodeFp8Row<D>(q, row, n, y_of, [scale](float y) { return Fp8TokenScaled(y, scale); });
}

template <DType D, class YOf>
__device__ __forceinline__ void QuantizeFp8TensorRow(const QuantArgs& q, uint32_t row, uint32_t n,
                                                     YOf&& y_of) {
  const float inverse = Fp8TensorInverse(q.fp8_scale);
  EncodeFp8Row<D>(q, row, n, y_of, [inverse](float y) { return Fp8TensorScaled(y, inverse); });
}

// nvfp4: the lanes of a block agree on its amax, the first of them stores the block's e4m3fn
// scale, every lane its E2M1 codes. No early exit: the shuffles need the whole warp, so every
// thread makes the same number of turns (the packs rounded up to a multiple of the block).
template <DType D, class YOf>
__device__ __forceinline__ void QuantizeNvfp4Row(const QuantArgs& q, uint32_t row, uint32_t n,
                                                 YOf&& y_of) {
  constexpr uint32_t E = kPackElems<D>;
  const uint32_t ppr = n / E;
  const uint32_t turns_end = (ppr + blockDim.x - 1) / blockDim.x * blockDim.x;
  for (uint32_t k = threadIdx.x; k < turns_end; k += blockDim.x) {
    const bool held = k < ppr;
    float y[E];
    float local = 0.f;
#pragma unroll
    for (uint32_t e = 0; e < E; ++e) y[e] = 0.f;
    if (held) {
      Unpack<D>(y_of(k), y);
#pragma unroll
      for (uint32_t e = 0; e < E; ++e) local = AbsMaxStep(local, y[e]);
    }
    const float block_amax = Fp4BlockMax<D>(local);
    const uint8_t sf = Nvfp4BlockScaleCode(block_amax, q.nvfp4_global);
    const float own_scale = Nvfp4OutputScale(sf, q.nvfp4_global);
    const float previous = FromPreviousFp4Block<D>(own_scale);
    const uint32_t block = k * E / kNvfp4BlockElems;
    const bool first_of_block = k % kLanesPerFp4Block<D> == 0;
    const float out_scale = ScaleBlockOf(q.breaks, block) != block ? previous : own_scale;
    if (!held) continue;
    if (first_of_block) q.block_scales[static_cast<size_t>(row) * Nvfp4RowBlocks(n) + block] = sf;
    uint8_t c[E];
#pragma unroll
    for (uint32_t e = 0; e < E; ++e)
      c[e] = EpilogueEncodeE2m1(Nvfp4Scaled(y[e], out_scale), q.breaks);
    StoreFp4Codes<D>(q, row, n, k, c);
  }
}

// The epilogue of one row, called by every thread of the block (block-uniform).
template <DType D, class YOf>
__device__ __forceinline__ void QuantizeRow(const QuantArgs& q, uint32_t row, uint32_t n,
                                            YOf&& y_of) {
  switch (q.scheme) {
    case QuantScheme::kFp8Token:
      QuantizeFp8TokenRow<D>(q, row, n, y_of);
      break;
    case QuantScheme::kFp8Tensor:
      QuantizeFp8TensorRow<D>(q, row, n, y_of);
      break;
    case QuantScheme::kNvfp4:
      QuantizeNvfp4Row<D>(q, row, n, y_of);
      break;
  }
}

// The norm and the epilogue of one row of a quantising call, from what the kernel has written:
// `rout`, the row's residual_out (the sum plus residual, rounded to T), and the weight; every
// thread reads back only the packs it wrote (k = threadIdx.x + i * blockDim.x), so no barrier is
// needed before. The norm is the reference's arithmetic (worker/numerics/reference.cc): the sum of
// squares and the scaling in fp64, rounded to float, then to T. The epilogue encodes the normed y,
// and one T ulp of y can move a code or a dynamic scale, so y is the reference's bit for bit, as
// the cpu specification's is. `out` (null unless the normed T output is kept) gets the same y.
//
// Only the quantising kernels (kQuant, kernel_dispatch.h) contain it, inlined, with rolled loops:
// unrolled over the held packs it took nvcc 295 s instead of 49 s on kernels_collective.cu (sm_90
// + sm_100) and clang -O3 for gfx942 over 7 minutes; out of line it gave each kernel a 120-byte
// stack frame (ptxas -v), where inlined there is none.
template <DType D>
__device__ __forceinline__ void QuantizeNormedRow(const QuantArgs& q, uint32_t row, uint32_t n,
                                                  float eps, const uint4* rout, const uint4* weight,
                                                  uint4* out) {
  constexpr uint32_t E = kPackElems<D>;
  const uint32_t ppr = n / E;
  double sumsq = 0;
  for (uint32_t k = threadIdx.x; k < ppr; k += blockDim.x) {
    float x[E];
    Unpack<D>(rout[k], x);
#pragma unroll
    for (uint32_t e = 0; e < E; ++e) sumsq += static_cast<double>(x[e]) * x[e];
  }
  const double inv = 1.0 / sqrt(BlockSum(sumsq) / n + static_cast<double>(eps));
  const auto y_of = [&](uint32_t k) {
    float x[E], w[E];
    Unpack<D>(rout[k], x);
    Unpack<D>(weight[k], w);
#pragma unroll
    for (uint32_t e = 0; e < E; ++e)
      x[e] = static_cast<float>(static_cast<double>(x[e]) * inv * static_cast<double>(w[e]));
    return PackOf<D>(x);
  };
  if (out != nullptr) {
    for (uint32_t k = threadIdx.x; k < ppr; k += blockDim.x) out[k] = y_of(k);
  }
  QuantizeRow<D>(q, row, n, y_of);
}

}  // namespace colltest::gpu
