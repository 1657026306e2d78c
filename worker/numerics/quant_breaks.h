// Planted quantisation bugs: each flag turns a quantising epilogue into one kind of broken kernel
// (the bugs docs/quantisation.md lists), so that a test can prove the check catches it and names
// the rule it breaks. Written once, host and device, so that the cpu specification and the GPU
// kernels plant the very same bug. Off in production: only colltest-worker-breaks reads them from
// its environment (COLLTEST_QUANT_BREAK).
#pragma once

#include <cmath>
#include <cstdint>

#include "worker/numerics/fp4.h"
#include "worker/numerics/fp8.h"
#include "worker/numerics/host_device.h"

namespace colltest {

enum QuantBreak : uint32_t {
  kQuantBreakNone = 0,
  // fp8_token's amax over the columns before the last rank's chunk (the row's first (W-1)/W): the
  // scale of a kernel that took it before the last rank's part of the sum had arrived.
  kQuantBreakAmaxBeforeLastRank = 1u << 0,
  // Round toward zero instead of to nearest even.
  kQuantBreakTruncate = 1u << 1,
  // Past the largest finite comes the NaN code instead of the largest finite.
  kQuantBreakNoSaturation = 1u << 2,
  // FP8 codes of the other format (e4m3fn for e4m3fnuz, or the reverse).
  kQuantBreakSwapFormat = 1u << 3,
  // nvfp4 elements scaled with the previous block's scale (the first block with its own).
  kQuantBreakBlockOffset = 1u << 4,
};

// The columns fp8_token's amax covers: all n, or with kQuantBreakAmaxBeforeLastRank the first
// (world - 1) / world of them (at least one).
COLLTEST_HD uint32_t AmaxColumns(uint32_t breaks, uint32_t n, uint32_t world) {
  if ((breaks & kQuantBreakAmaxBeforeLastRank) == 0 || world < 2) return n;
  const uint32_t before = n / world * (world - 1);
  return before > 0 ? before : 1;
}

// Round toward zero: the nearest code, stepped one down in magnitude when it lies beyond x.
COLLTEST_HD uint8_t TruncatingFp8(Fp8Format f, float x) {
  const uint8_t c = EncodeFp8(f, x);
  if (Fp8IsNan(f, c) || fabsf(DecodeFp8(f, c)) <= fabsf(x)) return c;
  const uint8_t magnitude = static_cast<uint8_t>((c & 0x7f) - 1);
  if (magnitude == 0 && f == Fp8Format::kE4m3fnuz) return 0;
  return static_cast<uint8_t>((c & 0x80) | magnitude);
}

// No saturation: past the largest finite comes the NaN code (__NV_NOSAT gives 0x7f | sign).
COLLTEST_HD uint8_t NonSaturatingFp8(Fp8Format f, float x) {
  if (fabsf(x) <= Fp8MaxFinite(f)) return EncodeFp8(f, x);
  if (f == Fp8Format::kE4m3fnuz) return 0x80;
  return static_cast<uint8_t>((FloatBits(x) & 0x80000000u) != 0 ? 0xff : 0x7f);
}

// The FP8 element encoder of a quantising epilogue with `breaks` planted (0: EncodeFp8).
COLLTEST_HD uint8_t EpilogueEncodeFp8(Fp8Format f, float x, uint32_t breaks) {
  if ((breaks & kQuantBreakSwapFormat) != 0) f = OtherFp8Format(f);
  if ((breaks & kQuantBreakTruncate) != 0) return TruncatingFp8(f, x);
  if ((breaks & kQuantBreakNoSaturation) != 0) return NonSaturatingFp8(f, x);
  return EncodeFp8(f, x);
}

// Round toward zero in E2M1 (saturation is E2M1's only way past 6: it has no NaN to break into).
COLLTEST_HD uint8_t TruncatingE2m1(float x) {
  const uint8_t c = EncodeE2m1(x);
  if ((c & 0x7u) == 0 || fabsf(DecodeE2m1(c)) <= fabsf(x)) return c;
  return static_cast<uint8_t>(c - 1);
}

// The E2M1 element encoder of nvfp4 with `breaks` planted (0: EncodeE2m1).
COLLTEST_HD uint8_t EpilogueEncodeE2m1(float x, uint32_t breaks) {
  return (breaks & kQuantBreakTruncate) != 0 ? TruncatingE2m1(x) : EncodeE2m1(x);
}

// The block whose scale nvfp4 element block `block` is scaled with.
COLLTEST_HD uint32_t ScaleBlockOf(uint32_t breaks, uint32_t block) {
  return (breaks & kQuantBreakBlockOffset) != 0 && block > 0 ? block - 1 : block;
}

}  // namespace colltest
