// Device glue of the input generator: the element generator is worker/numerics/input_elements.h,
// shared with the host, so every rank produces the host's values for the same coordinates and
// can regenerate any peer's input without communication. Here: rounding to T with the device's
// conversion instructions, and the per-thread forms the kernels call.
#pragma once

#include <cstdint>

#include "worker/backends/gpu/elem_bits.h"
#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/input_elements.h"
#include "worker/numerics/input_hash.h"

namespace colltest::gpu {

__device__ __forceinline__ uint32_t DevStoredBits(DType t, float f) {
  switch (t) {
    case DType::kBf16:
      return FloatToBf16(f);
    case DType::kFp16:
      return FloatToHalfBits(f);
    default:
      return __float_as_uint(f);
  }
}
__device__ __forceinline__ float DevRoundTo(DType t, float f) {
  return t == DType::kFp32 ? f : ElemFromBits(t, DevStoredBits(t, f));
}

// The rounding policy of the shared numerics headers (worker/numerics/host_rounding.h) in device
// code: round to nearest even, as the host's.
struct DeviceRounding {
  __device__ static float RoundTo(DType t, float f) { return DevRoundTo(t, f); }
  __device__ static float FromBits(DType t, uint32_t bits) { return ElemFromBits(t, bits); }
};

using inputs::RowPlan;
using inputs::StreamPlan;

// The element at (row, col) of a stream (inputs::PlanStream, once per thread) and one of its rows
// (inputs::PlanRow).
__device__ __forceinline__ float ValueAt(Pattern p, DType t, const StreamPlan& s, const RowPlan& r,
                                         uint32_t row, uint32_t col) {
  return inputs::PlannedValue<DeviceRounding>(p, t, s, r, row, col);
}
// The weight of column `col`; `weight_key` is inputs::WeightKey(seed), once per thread.
__device__ __forceinline__ float WeightAt(Pattern p, DType t, uint64_t weight_key, uint32_t col) {
  return inputs::WeightAt<DeviceRounding>(p, t, weight_key, col);
}

}  // namespace colltest::gpu
