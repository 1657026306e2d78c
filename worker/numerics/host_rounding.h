// The host's rounding policy of the host-device numerics (input_elements.h, quant_code_rule.h):
// how a value is rounded to T and how T's stored bits are read. The fp16 conversions of dtype.cc
// are host code, so these headers take the policy as a template parameter; the kernels pass their
// own (worker/backends/gpu/device_inputs.cuh), made of the device's conversion instructions. Both
// round to nearest even, so the two give the same values bit for bit.
#pragma once

#include <cstdint>

#include "worker/numerics/dtype.h"

namespace colltest {

struct HostRounding {
  static float RoundTo(DType t, float f) { return colltest::RoundTo(t, f); }
  // `bits` as StoredBits writes them: bf16 and fp16 in the low 16 bits.
  static float FromBits(DType t, uint32_t bits) {
    switch (t) {
      case DType::kBf16:
        return Bf16ToFloat(static_cast<uint16_t>(bits));
      case DType::kFp16:
        return Fp16ToFloat(static_cast<uint16_t>(bits));
      case DType::kFp32:
        return BitsToFloat(bits);
    }
    return BitsToFloat(bits);
  }
};

}  // namespace colltest
