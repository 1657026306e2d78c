// Element types under test and their conversions. bf16 and fp16 are stored as their 16-bit
// patterns; every conversion from float rounds to nearest even, as the GPU intrinsics do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "worker/numerics/host_device.h"

namespace colltest {

enum class DType : uint8_t { kBf16, kFp16, kFp32 };

constexpr size_t ElemBytes(DType t) { return t == DType::kFp32 ? 4 : 2; }
// Elements in one 16-byte pack, the unit every kernel loads, stores and polls.
constexpr uint32_t PackElems(DType t) { return static_cast<uint32_t>(16 / ElemBytes(t)); }
const char* DTypeName(DType t);

COLLTEST_HD uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
COLLTEST_HD float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Round-to-nearest-even; NaN stays a quiet NaN.
COLLTEST_HD uint16_t FloatToBf16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
COLLTEST_HD float Bf16ToFloat(uint16_t h) { return BitsToFloat(static_cast<uint32_t>(h) << 16); }

// IEEE binary16, round-to-nearest-even, with subnormals, overflow to Inf and NaN kept.
uint16_t FloatToFp16(float f);
float Fp16ToFloat(uint16_t h);

// Rounds `f` to the nearest value representable in `t`.
float RoundTo(DType t, float f);
// The bit pattern of `f` (which must be representable in `t`) as stored in memory.
uint32_t StoredBits(DType t, float f);
// The bulk form of StoredBits: `count` values stored as T, little-endian, at `dst` (ElemBytes(t)
// bytes each), the type dispatched once per row instead of once per element.
void StoreRow(DType t, const float* values, size_t count, void* dst);
// Distance in units in the last place of `t` between two values representable in `t`; +0 and -0
// are the same point. Returns UINT64_MAX when either is NaN.
uint64_t UlpDistance(DType t, float a, float b);

}  // namespace colltest
