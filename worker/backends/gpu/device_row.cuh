// The fused epilogue shared by every variant: residual add rounded to T, RMSNorm with a block
// reduction of the sum of squares, the row held in registers (at most kMaxRowPacks packs per
// thread), or, in a quantising kernel, QuantizeNormedRow. Loop trip counts are
// block-uniform around every __syncthreads.
#pragma once

#include <cstdint>

#include "worker/backends/gpu/device_elem.cuh"
#include "worker/backends/gpu/device_quant.cuh"
#include "worker/backends/gpu/device_reduce.cuh"
#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/backends/gpu/kernels.h"

namespace colltest::gpu {

// `sum_of(k, s)` yields the all-reduced pack k of the row (already rounded to T) and returns false
// when its wait gave up. Returns false (block-uniformly) when any thread's wait gave up. kQuant:
// the kernel is the quantising one (kernel_dispatch.h, KernelEpilogues), whose norm is
// QuantizeNormedRow's.
template <DType D, bool kQuant, class SumOf>
__device__ __forceinline__ bool FusedRow(const CallArgs& a, uint32_t row, SumOf&& sum_of) {
  constexpr uint32_t E = kPackElems<D>;
  const uint32_t ppr = a.n / E;
  const size_t row_pack = static_cast<size_t>(row) * ppr;
  const uint4* res = static_cast<const uint4*>(a.residual_in) + row_pack;
  uint4* rout = static_cast<uint4*>(a.residual_out) + row_pack;
  uint4* out = static_cast<uint4*>(a.out) + row_pack;
  const uint4* w = static_cast<const uint4*>(a.weight);
  uint4 r[kMaxRowPacks];
  float sumsq = 0.f;
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
      for (uint32_t e = 0; e < E; ++e) sumsq += rr[e] * rr[e];
    }
  }
  if (__syncthreads_or(failed)) return false;
  if constexpr (kQuant) {
    QuantizeNormedRow<D>(a.quant, row, a.n, a.eps, rout, w, a.quant.keep_normed ? out : nullptr);
    return true;
  }
  const float total = BlockSum(sumsq);
  const float inv = 1.0f / sqrtf(total / static_cast<float>(a.n) + a.eps);
#pragma unroll
  for (uint32_t i = 0; i < kMaxRowPacks; ++i) {
    const uint32_t k = threadIdx.x + i * blockDim.x;
    if (k < ppr) {
      float rr[E], wf[E];
      Unpack<D>(r[i], rr);
      Unpack<D>(w[k], wf);
#pragma unroll
      for (uint32_t e = 0; e < E; ++e) rr[e] = rr[e] * inv * wf[e];
      out[k] = PackOf<D>(rr);
    }
  }
  return true;
}

}  // namespace colltest::gpu
