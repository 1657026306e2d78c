// Round-to-nearest-even onto the small sign-magnitude floats the quantising epilogues store
// (FP8 E4M3, FP4 E2M1), written once so that every encoder differs only in its layout.
#pragma once

#include <cstdint>

#include "worker/numerics/dtype.h"
#include "worker/numerics/host_device.h"

namespace colltest {

// A float with `mantissa_bits` stored mantissa bits, exponent bias `bias`, subnormals below
// 2^(1 - bias) and no infinities. Codes of one sign grow with the value, which is what makes
// the code distance of quant_diff.h a distance in value order.
struct MinifloatLayout {
  int mantissa_bits;
  int bias;
};

// 2^e for the exponents these formats reach (far inside float's normal range).
COLLTEST_HD float Pow2(int e) { return BitsToFloat(static_cast<uint32_t>(e + 127) << 23); }

// The magnitude code (exponent and mantissa fields, no sign) nearest to |f|, ties to the even
// code. `f` must be finite; the result may lie past the format's largest finite code, so callers
// saturate before calling for magnitudes at or beyond it.
COLLTEST_HD uint32_t RoundMagnitudeToMinifloat(float f, MinifloatLayout layout) {
  const uint32_t abs = FloatBits(f) & 0x7fffffffu;
  const int m = layout.mantissa_bits;
  const int min_exp = 1 - layout.bias;  // exponent of the smallest normal
  const int float_exp = static_cast<int>(abs >> 23) - 127;
  // Half the smallest subnormal is 2^(min_exp - m - 1): below it the value rounds to zero, and at
  // it exactly the tie goes to the even code, zero. Float subnormals fall in here too.
  const int half_subnormal_exp = min_exp - m - 1;
  if (float_exp < half_subnormal_exp) return 0;
  if (float_exp == half_subnormal_exp && (abs & 0x7fffffu) == 0) return 0;
  // The value is sig * 2^(float_exp - 23). Counted in units of the target's last place at
  // exponent `exp` (clamped to the normal range, which makes subnormals), `shift` bits go.
  const uint32_t sig = (abs & 0x7fffffu) | 0x800000u;
  const int exp = float_exp > min_exp ? float_exp : min_exp;
  const int shift = 23 - m + (exp - float_exp);  // at most 24: float_exp >= half_subnormal_exp
  uint32_t kept = sig >> shift;
  const uint32_t rem = sig & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (kept & 1u) != 0)) ++kept;
  // Normal: kept in [2^m, 2^(m+1)], the implicit bit included; a carry to 2^(m+1) moves into the
  // exponent field by the addition. Subnormal (exp == min_exp, biased exponent 1): kept < 2^m
  // gives biased exponent 0, and kept == 2^m the smallest normal.
  return (static_cast<uint32_t>(exp + layout.bias) << m) + kept - (1u << m);
}

// The value of a magnitude code (no sign bit) under `layout`.
COLLTEST_HD float DecodeMinifloatMagnitude(uint32_t magnitude, MinifloatLayout layout) {
  const int m = layout.mantissa_bits;
  const uint32_t exp_field = magnitude >> m;
  const uint32_t mantissa = magnitude & ((1u << m) - 1u);
  if (exp_field == 0) return static_cast<float>(mantissa) * Pow2(1 - layout.bias - m);
  return static_cast<float>(mantissa | (1u << m)) *
         Pow2(static_cast<int>(exp_field) - layout.bias - m);
}

}  // namespace colltest
