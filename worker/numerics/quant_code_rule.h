// Whether an element code a kernel wrote passes where the reference wrote another, under the
// tolerances of quant_diff.h: one rule for the host's diff (quant_diff.cc) and the GPU check
// kernel (worker/backends/gpu/kernels_support.cu). Rounding to T comes from a policy
// (host_rounding.h says why).
#pragma once

#include <cstdint>

#include "worker/numerics/dtype.h"
#include "worker/numerics/fp4.h"
#include "worker/numerics/fp8.h"
#include "worker/numerics/host_device.h"
#include "worker/numerics/quant_diff.h"
#include "worker/numerics/quant_epilogue.h"

namespace colltest {

// What the rule needs of one element of a quantised row: its codes and the scale that took y into
// code units (quant_epilogue.h): fp8_token's row scale (code units = y / scale), fp8_tensor's
// inverse scale (y * inverse), nvfp4's output scale of the element's block (y * out).
struct ElementCodes {
  QuantScheme scheme = QuantScheme::kFp8Token;
  Fp8Format format = Fp8Format::kE4m3fn;  // of the fp8 schemes
  float scale = 0.0f;
};

COLLTEST_HD bool IsNanElementCode(const ElementCodes& e, uint8_t code) {
  return e.scheme != QuantScheme::kNvfp4 && Fp8IsNan(e.format, code);
}

// Distance in value order (+0 and -0 both at 0); kNanCodeDistance when either code is an fp8 NaN.
COLLTEST_HD uint32_t ElementCodeDistance(const ElementCodes& e, uint8_t a, uint8_t b) {
  if (IsNanElementCode(e, a) || IsNanElementCode(e, b)) return kNanCodeDistance;
  const bool e2m1 = e.scheme == QuantScheme::kNvfp4;
  const int ia = e2m1 ? E2m1OrderedIndex(a) : Fp8OrderedIndex(a);
  const int ib = e2m1 ? E2m1OrderedIndex(b) : Fp8OrderedIndex(b);
  return static_cast<uint32_t>(ia > ib ? ia - ib : ib - ia);
}

// The value a code stands for, in code units.
COLLTEST_HD float DecodeElementCode(const ElementCodes& e, uint8_t code) {
  return e.scheme == QuantScheme::kNvfp4 ? DecodeE2m1(code) : DecodeFp8(e.format, code);
}

// strict: the codes are one value (equal, or +0 against -0: the Lamport variants carry a -0.0
//         input as +0.0, its bits being their sentinel, so their zero sums are +0).
// ulp:    also one code step where the two codes' midpoint, taken back to y's units and rounded
//         to T, is y rounded to T: the value is a tie once it has been through T.
// Every step is an exact double operation or one IEEE rounding, with no product added to
// anything, so host and device agree whatever either contracts.
template <class Rounding>
COLLTEST_HD bool ElementCodeAccepted(QuantTolerance tolerance, const ElementCodes& e, uint8_t got,
                                     uint8_t want, float y, DType t) {
  const uint32_t distance = ElementCodeDistance(e, got, want);
  if (distance == 0) return true;
  if (tolerance != QuantTolerance::kUlp || distance != 1) return false;
  // A zero output scale sends every y to code 0: no y maps back to a tie.
  if (e.scheme == QuantScheme::kNvfp4 && e.scale == 0.0f) return false;
  const double mid =
      (static_cast<double>(DecodeElementCode(e, got)) + DecodeElementCode(e, want)) / 2;
  const double y_tie = e.scheme == QuantScheme::kFp8Token ? mid * e.scale : mid / e.scale;
  if (y_tie != y_tie) return false;  // NaN
  return Rounding::RoundTo(t, static_cast<float>(y_tie)) == Rounding::RoundTo(t, y);
}

}  // namespace colltest
