// Block-wide reductions of the kernels: every thread of the block gets the result. Loop trip
// counts around them must be block-uniform (they hold __syncthreads).
#pragma once

#include "worker/backends/gpu/gpu_runtime.h"

namespace colltest::gpu {

struct WarpSumOp {
  template <class V>
  __device__ __forceinline__ V operator()(V v) const {
    return WarpSum(v);
  }
};
struct WarpMaxOp {
  __device__ __forceinline__ float operator()(float v) const { return WarpMax(v); }
};

// The whole block's reduction of v (every thread gets it): WarpOp reduces a warp, `init` is the
// identity. Each instantiation has its own shared arrays, so a kernel may use several in a row.
template <class V, class WarpOp>
__device__ __forceinline__ V BlockReduce(V v, V init) {
  __shared__ V partial[64];
  __shared__ V total;
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  v = WarpOp()(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? partial[lane] : init;
    v = WarpOp()(v);
    if (lane == 0) total = v;
  }
  __syncthreads();
  return total;
}
template <class V>
__device__ __forceinline__ V BlockSum(V v) {
  return BlockReduce<V, WarpSumOp>(v, V(0));
}
__device__ __forceinline__ float BlockMax(float v) { return BlockReduce<float, WarpMaxOp>(v, 0.f); }

}  // namespace colltest::gpu
