// An element's stored bits as a float: one function for the kernels (input generation, the
// reference check) and for host code (the first mismatching element of a report).
#pragma once

#include <cstdint>

#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/host_device.h"

namespace colltest::gpu {

// bf16 and fp16 in the low 16 bits.
COLLTEST_HD float ElemFromBits(DType t, uint32_t bits) {
  switch (t) {
    case DType::kBf16:
      return Bf16ToFloat(static_cast<uint16_t>(bits));
    case DType::kFp16:
      return HalfBitsToFloat(static_cast<uint16_t>(bits));
    default:
      return BitsToFloat(bits);
  }
}

}  // namespace colltest::gpu
