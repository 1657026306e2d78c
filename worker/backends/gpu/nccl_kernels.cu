// The residual + RMSNorm kernel after NCCL's all-reduce (see nccl_kernels.h).
#include "worker/backends/gpu/device_elem.cuh"
#include "worker/backends/gpu/device_row.cuh"
#include "worker/backends/gpu/nccl_kernels.h"

namespace colltest::gpu {
namespace {

template <DType D, bool kQuant>
__global__ void __launch_bounds__(512) NormFromSumsKernel(const uint4* sums, CallArgs a) {
  const uint32_t ppr = a.n / kPackElems<D>;
  for (uint32_t row = blockIdx.x; row < a.m; row += gridDim.x) {
    const uint4* src = sums + static_cast<size_t>(row) * ppr;
    FusedRow<D, kQuant>(a, row, [&](uint32_t k, uint4& s) {
      s = src[k];
      return true;
    });
  }
}

}  // namespace

KernelStatus LaunchNormFromSums(DType dtype, const void* sums, const CallArgs& args, uint32_t grid,
                                uint32_t threads, Stream stream) {
  const uint4* p = static_cast<const uint4*>(sums);
  return DispatchDtype(dtype, [&](auto d) -> KernelStatus {
    return DispatchEpilogue(args.quant.on, [&](auto q) -> KernelStatus {
      NormFromSumsKernel<decltype(d)::value, decltype(q)::value>
          <<<grid, threads, 0, stream>>>(p, args);
      return GetLastError();
    });
  });
}

}  // namespace colltest::gpu
