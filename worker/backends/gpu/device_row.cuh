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

// The norm's arithmetic. A quantising call (`exact`) takes the reference's
// (worker/numerics/reference.cc): the sum of squares and the scaling in fp64, rounded to float
// (PackOf then rounds to T). Its epilogue encodes the normed value, and one T ulp of it can move a
// code or a dynamic scale, so there the kernels' normed output is the reference's bit for bit, as
// the cpu specification's is. Every other call keeps fp32, which the T diff's ulp allows: fp64 in
// every call cost 12-59 % kernel overhead on one H200 (bench/results/*_a8b76fc). The flag is
// block-uniform, so each branch is taken by the whole block.
struct RowNorm {
  bool exact;
  float sumsq_f = 0.f;
  double sumsq_d = 0;
  float inv_f = 0.f;
  double inv_d = 0;

  __device__ __forceinline__ explicit RowNorm(bool quantising) : exact(quantising) {}
  __device__ __forceinline__ void Add(float x) {
    if (exact) {
      sumsq_d += static_cast<double>(x) * x;
    } else {
      sumsq_f += x * x;
    }
  }
  // Every thread of the block calls it, after its last Add.
  __device__ __forceinline__ void Finish(uint32_t n, float eps) {
    if (exact) {
      inv_d = 1.0 / sqrt(BlockSum(sumsq_d) / n + static_cast<double>(eps));
    } else {
      inv_f = 1.0f / sqrtf(BlockSum(sumsq_f) / static_cast<float>(n) + eps);
    }
  }
  __device__ __forceinline__ float Apply(float x, float w) const {
    if (exact) return static_cast<float>(static_cast<double>(x) * inv_d * static_cast<double>(w));
    return x * inv_f * w;
  }
};

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
  RowNorm norm(a.quant.on);
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
      for (uint32_t e = 0; e < E; ++e) norm.Add(rr[e]);
    }
  }
  if (__syncthreads_or(failed)) return false;
  norm.Finish(a.n, a.eps);
  const bool write_normed = a.quant.WritesNormed();
#pragma unroll
  for (uint32_t i = 0; i < kMaxRowPacks; ++i) {
    const uint32_t k = threadIdx.x + i * blockDim.x;
    if (k < ppr) {
      float rr[E], wf[E];
      Unpack<D>(r[i], rr);
      Unpack<D>(w[k], wf);
#pragma unroll
      for (uint32_t e = 0; e < E; ++e) rr[e] = norm.Apply(rr[e], wf[e]);
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
