// The epilogue of the `nccl` variant: NCCL has already summed the rows (in T) into `sums`; this
// kernel adds the residual and applies RMSNorm with the same FusedRow arithmetic as every other
// variant, so only the all-reduce differs.
#pragma once

#include <cstdint>

#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/backends/gpu/kernels.h"

namespace colltest::gpu {

// `sums`: m * n of T, the all-reduced rows. One block per row (grid-stride over rows).
KernelStatus LaunchNormFromSums(DType dtype, const void* sums, const CallArgs& args, uint32_t grid,
                                uint32_t threads, Stream stream);

}  // namespace colltest::gpu
