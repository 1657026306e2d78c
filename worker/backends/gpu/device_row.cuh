// The fused epilogue shared by every variant: residual add rounded to T, RMSNorm with a block
// reduction of the sum of squares, the row held in registers (at most kMaxRowPacks packs per
// thread). Loop trip counts are block-uniform around every __syncthreads.
#pragma once

#include <cstdint>

#include "worker/backends/gpu/device_elem.cuh"
#include "worker/backends/gpu/device_quant.cuh"
#include "worker/backends/gpu/device_reduce.cuh"
#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/backends/gpu/kernels.h"

namespace colltest::gpu {

// The norm in the reference's arithmetic (worker/numerics/reference.cc): the sum of squares and
// the scaling in fp64, rounded to float (PackOf then rounds to T). A quantising epilogue encodes
// the normed value, and one T ulp of it can move a code or a dynamic scale, so the kernels' normed
// output is the reference's bit for bit, as the cpu specification's is. The fp64 work is per row
// and per element multiply; the kernels stay bound by memory and waits.
__device__ __forceinline__ double NormInverse(double sumsq, uint32_t n, float eps) {
  return 1.0 / sqrt(sumsq / n + static_cast<double>(eps));
}
__device__ __forceinline__ float Normed(float x, double inv, float w) {
  return static_cast<float>(static_cast<double>(x) * inv * static_cast<double>(w));
}

// `sum_of(k, s)` yields the all-reduced pack k of the row (already rounded to T) and returns false
// when its wait gave up. Returns false (block-uniformly) when any thread's wait gave up.
template <DType D, class SumOf>
__device__ __forceinline__ bool FusedRow(const CallArgs& a, uint32_t row, SumOf&& sum_of) {
  constexpr uint32_t E = kPackElems<D>;
  const uint32_t ppr = a.n / E;
  const size_t row_pack = static_cast<size_t>(row) * ppr;
  const uint4* res = static_cast<const uint4*>(a.residual_in) + row_pack;
  uint4* rout = static_cast<uint4*>(a.residual_out) + row_pack;
  uint4* out = static_cast<uint4*>(a.out) + row_pack;
  const uint4* w = static_cast<const uint4*>(a.weight);
  uint4 r[kMaxRowPacks];
  double sumsq = 0;
  int failed = 0;
#pragma unroll
  for (uint32_t i = 0; i < kMaxRowPacks; ++i) {
    const uint32_t k = threadIdx.x + i * blockDim.x;
    if (k < ppr) {
      uint4 s;
      if (!sum_of(k, s)) failed = 1;
      float sf[E];
      Unpack<D>(s, sf);
      if (a.residual) {
        float rf[E];
        Unpack<D>(res[k], rf);
#pragma unroll
        for (uint32_t e = 0; e < E; ++e) sf[e] = sf[e] + rf[e];
      }
      r[i] = PackOf<D>(sf);
      rout[k] = r[i];
      float rr[E];
      Unpack<D>(r[i], rr);
#pragma unroll
      for (uint32_t e = 0; e < E; ++e) sumsq += static_cast<double>(rr[e]) * rr[e];
    }
  }
  if (__syncthreads_or(failed)) return false;
  const double inv = NormInverse(BlockSum(sumsq), a.n, a.eps);
  const bool write_normed = a.quant.WritesNormed();
#pragma unroll
  for (uint32_t i = 0; i < kMaxRowPacks; ++i) {
    const uint32_t k = threadIdx.x + i * blockDim.x;
    if (k < ppr) {
      float rr[E], wf[E];
      Unpack<D>(r[i], rr);
      Unpack<D>(w[k], wf);
#pragma unroll
      for (uint32_t e = 0; e < E; ++e) rr[e] = Normed(rr[e], inv, wf[e]);
      r[i] = PackOf<D>(rr);  // the normed pack, rounded to T: what the epilogue quantises
      if (write_normed) out[k] = r[i];
    }
  }
  if (a.quant.on) {
    uint4 y[kMaxRowPacks];
#pragma unroll
    for (uint32_t i = 0; i < kMaxRowPacks; ++i) y[i] = r[i];
    QuantizeHeldRow<D, kMaxRowPacks>(a.quant, row, a.n, y);
  }
  return true;
}

}  // namespace colltest::gpu
