// FP4 E2M1, the element format of NVFP4: values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives
// (bit 3 the sign, so -0 is 0x8). Encoding rounds to nearest even and saturates at 6 (the only
// conversion the hardware has: cvt.rn.satfinite.e2m1x2.f32). The format has no NaN: a NaN gives
// +6 (0x7), as CUDA's __nv_cvt_float_to_fp4 does.
// Two codes share a byte, the earlier element in the low nibble: cvt.rn.satfinite.e2m1x2.f32 d,
// a, b puts b in the low nibble and FlashInfer's fp32_vec_to_e2m1 passes element 0 as b.
#pragma once

#include <cstdint>

#include "worker/numerics/dtype.h"
#include "worker/numerics/host_device.h"
#include "worker/numerics/minifloat.h"

namespace colltest {

constexpr MinifloatLayout kE2m1Layout{1, 1};
constexpr float kE2m1MaxFinite = 6.0f;
constexpr uint8_t kE2m1MaxMagnitude = 0x7;

COLLTEST_HD uint8_t EncodeE2m1(float x) {
  const uint32_t bits = FloatBits(x);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return kE2m1MaxMagnitude;
  const uint32_t magnitude = abs >= FloatBits(kE2m1MaxFinite)
                                 ? kE2m1MaxMagnitude
                                 : RoundMagnitudeToMinifloat(x, kE2m1Layout);
  return static_cast<uint8_t>(((bits >> 31) << 3) | magnitude);
}

COLLTEST_HD float DecodeE2m1(uint8_t code) {
  const float magnitude = DecodeMinifloatMagnitude(code & 0x7u, kE2m1Layout);
  return (code & 0x8u) != 0 ? -magnitude : magnitude;
}

// Position of a code in value order (+0 and -0 both 0), as Fp8OrderedIndex.
COLLTEST_HD int E2m1OrderedIndex(uint8_t code) {
  const int magnitude = code & 0x7;
  return (code & 0x8u) != 0 ? -magnitude : magnitude;
}

// One byte of packed NVFP4: element 2i in the low nibble, element 2i + 1 in the high one.
COLLTEST_HD uint8_t PackE2m1Pair(uint8_t first, uint8_t second) {
  return static_cast<uint8_t>((first & 0xfu) | ((second & 0xfu) << 4));
}
COLLTEST_HD uint8_t PackedE2m1At(const uint8_t* packed, uint32_t i) {
  return static_cast<uint8_t>((packed[i / 2] >> ((i % 2) * 4)) & 0xfu);
}

}  // namespace colltest
