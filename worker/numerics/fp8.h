// FP8 E4M3 in its two encodings, with the saturating conversion the serving libraries quantise
// with (CUDA's __NV_SATFINITE, HIP's saturating cvt):
//   e4m3fn   (OCP, NVIDIA): bias 7, largest finite 448 (0x7e), NaN 0x7f and 0xff, has -0 (0x80).
//   e4m3fnuz (AMD MI300, gfx942): bias 8, largest finite 240 (0x7f), 0x80 the only NaN, no -0.
// Encoding rounds to nearest even, saturates every magnitude at or past the largest finite
// (infinities included) to it with the sign kept, and turns NaN into the NaN code (0x7f for fn,
// sign dropped as CUDA's conversion does; 0x80 for fnuz). A negative value that rounds to zero
// gives 0x80 (-0) in fn and 0x00 in fnuz.
#pragma once

#include <cstdint>

#include "worker/numerics/dtype.h"
#include "worker/numerics/host_device.h"
#include "worker/numerics/minifloat.h"

namespace colltest {

enum class Fp8Format : uint8_t { kE4m3fn, kE4m3fnuz };
inline const char* Fp8FormatName(Fp8Format f) {
  return f == Fp8Format::kE4m3fn ? "e4m3fn" : "e4m3fnuz";
}

COLLTEST_HD Fp8Format OtherFp8Format(Fp8Format f) {
  return f == Fp8Format::kE4m3fn ? Fp8Format::kE4m3fnuz : Fp8Format::kE4m3fn;
}
COLLTEST_HD MinifloatLayout Fp8Layout(Fp8Format f) {
  return MinifloatLayout{3, f == Fp8Format::kE4m3fn ? 7 : 8};
}
COLLTEST_HD float Fp8MaxFinite(Fp8Format f) { return f == Fp8Format::kE4m3fn ? 448.0f : 240.0f; }
// The magnitude code of the largest finite value (add 0x80 for its negative).
COLLTEST_HD uint8_t Fp8MaxMagnitude(Fp8Format f) { return f == Fp8Format::kE4m3fn ? 0x7e : 0x7f; }
COLLTEST_HD uint8_t Fp8NanCode(Fp8Format f) { return f == Fp8Format::kE4m3fn ? 0x7f : 0x80; }
COLLTEST_HD bool Fp8IsNan(Fp8Format f, uint8_t code) {
  return f == Fp8Format::kE4m3fn ? (code & 0x7f) == 0x7f : code == 0x80;
}

COLLTEST_HD uint8_t EncodeFp8(Fp8Format f, float x) {
  const uint32_t bits = FloatBits(x);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return Fp8NanCode(f);
  // Floats of one sign order like their bit patterns, so the bits compare as the magnitudes do.
  // Below the largest finite RNE never rounds past it: the next step up does not exist.
  const uint32_t magnitude = abs >= FloatBits(Fp8MaxFinite(f))
                                 ? Fp8MaxMagnitude(f)
                                 : RoundMagnitudeToMinifloat(x, Fp8Layout(f));
  if ((bits >> 31) == 0) return static_cast<uint8_t>(magnitude);
  if (f == Fp8Format::kE4m3fnuz && magnitude == 0) return 0;  // 0x80 is fnuz's NaN
  return static_cast<uint8_t>(0x80u | magnitude);
}

COLLTEST_HD float DecodeFp8(Fp8Format f, uint8_t code) {
  if (Fp8IsNan(f, code)) return BitsToFloat(0x7fc00000u);
  const float magnitude = DecodeMinifloatMagnitude(code & 0x7fu, Fp8Layout(f));
  return (code & 0x80u) != 0 ? -magnitude : magnitude;
}

// Position of a non-NaN code in value order: magnitude code with the value's sign. +0 and -0 share
// position 0, and adjacent values differ by one.
COLLTEST_HD int Fp8OrderedIndex(uint8_t code) {
  const int magnitude = code & 0x7f;
  return (code & 0x80u) != 0 ? -magnitude : magnitude;
}

}  // namespace colltest
