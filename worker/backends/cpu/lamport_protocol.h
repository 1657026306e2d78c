// The Lamport flag-in-data primitives (DESIGN section 4): the data is the flag.
//
// Staging is armed with the sentinel -0.0 in every lane. Producers map -0.0 to +0.0 before they
// store, so a stored value can never look like the sentinel. Consumers poll a 16-byte pack until
// no 32-bit word still equals the sentinel word, comparing bits: as floats, +0.0 == -0.0 (and with
// flush-to-zero, negative subnormals too), which would make real zeros look "not arrived" forever.
#pragma once

#include <cstdint>
#include <cstring>

#include "worker/backends/cpu/elem.h"
#include "worker/backends/cpu/pack.h"

namespace colltest::cpu {

template <DType D>
constexpr uint32_t SentinelWord() {
  return D == DType::kFp32 ? Elem<D>::kNegZero : (Elem<D>::kNegZero << 16) | Elem<D>::kNegZero;
}

template <DType D>
constexpr Pack SentinelPack() {
  constexpr uint32_t w = SentinelWord<D>();
  return Pack{{w, w, w, w}};
}

// Producer side: no lane may leave holding -0.0.
template <DType D>
Pack Canonicalize(Pack p) {
  for (uint32_t& w : p.w) {
    if constexpr (D == DType::kFp32) {
      if (w == 0x80000000u) w = 0;
    } else {
      if ((w & 0xffffu) == 0x8000u) w &= 0xffff0000u;
      if ((w >> 16) == 0x8000u) w &= 0x0000ffffu;
    }
  }
  return p;
}

// Consumer side: arrived when no word holds the sentinel bits.
template <DType D>
bool Arrived(const Pack& p) {
  for (uint32_t w : p.w) {
    if (w == SentinelWord<D>()) return false;
  }
  return true;
}

// The bug the bit comparison prevents, kept for the mutation tests: any zero lane reads as the
// sentinel.
template <DType D>
bool ArrivedFloatCompare(const Pack& p) {
  using S = typename Elem<D>::Storage;
  S lanes[kPackElems<D>];
  std::memcpy(lanes, p.w, sizeof lanes);
  for (S lane : lanes) {
    if (Elem<D>::ToFloat(lane) == -0.0f) return false;
  }
  return true;
}

}  // namespace colltest::cpu
