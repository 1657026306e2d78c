#include "worker/numerics/dtype.h"

#include <cstdint>
#include <cstring>

namespace colltest {

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp32:
      return "fp32";
  }
  return "unknown";
}

uint16_t FloatToFp16(float f) {
  const uint32_t u = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) {
    // Keep the top payload bits and force the quiet bit so that a signalling NaN whose payload
    // lives only in the low bits does not turn into Inf.
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  const int exp = static_cast<int>(abs >> 23) - 127;
  if (exp > 15) return static_cast<uint16_t>(sign | 0x7c00u);  // also +-Inf
  if (exp >= -14) {
    // Round to nearest even at fp16's last mantissa bit by adding just under half an ulp plus the
    // kept lsb, as FloatToBf16 does: branch-free, which matters in the reference's inner loop
    // where the round-up decision is random. A carry bumps the exponent, and out of exponent 30
    // it gives exactly Inf (0x7c00), since exp <= 15 here.
    const uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((r >> 13) - (112u << 10)));
  }
  // Subnormal result: count units of 2^-24. The value is (mant | 1 << 23) * 2^(exp - 23), so the
  // shift is -(exp + 1); beyond 24 even the halfway point is lost and the result is zero.
  const int shift = -(exp + 1);
  if (shift > 24) return sign;
  const uint32_t full = (abs & 0x7fffffu) | 0x800000u;
  uint32_t h = full >> shift;
  const uint32_t rem = full & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  // Rounding 0x3ff up yields 0x400, the smallest normal, which is the right encoding.
  h += static_cast<uint32_t>(rem > half) | (static_cast<uint32_t>(rem == half) & h);
  return static_cast<uint16_t>(sign | h);
}

float Fp16ToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return BitsToFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    // mant * 2^-24 is exact in float; the sign is applied by bits so that -0 survives.
    const float mag = static_cast<float>(mant) * 0x1p-24f;
    return BitsToFloat(sign | FloatBits(mag));
  }
  return BitsToFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

float RoundTo(DType t, float f) {
  switch (t) {
    case DType::kBf16:
      return Bf16ToFloat(FloatToBf16(f));
    case DType::kFp16:
      return Fp16ToFloat(FloatToFp16(f));
    case DType::kFp32:
      return f;
  }
  return f;
}

uint32_t StoredBits(DType t, float f) {
  switch (t) {
    case DType::kBf16:
      return FloatToBf16(f);
    case DType::kFp16:
      return FloatToFp16(f);
    case DType::kFp32:
      return FloatBits(f);
  }
  return FloatBits(f);
}

void StoreRow(DType t, const float* values, size_t count, void* dst) {
  switch (t) {
    case DType::kBf16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < count; ++i) out[i] = FloatToBf16(values[i]);
      return;
    }
    case DType::kFp16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < count; ++i) out[i] = FloatToFp16(values[i]);
      return;
    }
    case DType::kFp32:
      std::memcpy(dst, values, count * sizeof(float));
      return;
  }
}

namespace {

// Maps a sign-magnitude pattern of `width` bits onto integers ordered like the values, with +0
// and -0 both at 0, so that neighbouring representable values differ by exactly one.
int64_t OrderedIndex(uint32_t bits, int width) {
  const uint32_t sign_bit = 1u << (width - 1);
  const int64_t mag = static_cast<int64_t>(bits & (sign_bit - 1u));
  return (bits & sign_bit) ? -mag : mag;
}

}  // namespace

uint64_t UlpDistance(DType t, float a, float b) {
  if (a != a || b != b) return UINT64_MAX;
  const int width = static_cast<int>(ElemBytes(t) * 8);
  const int64_t ia = OrderedIndex(StoredBits(t, a), width);
  const int64_t ib = OrderedIndex(StoredBits(t, b), width);
  return static_cast<uint64_t>(ia > ib ? ia - ib : ib - ia);
}

}  // namespace colltest
