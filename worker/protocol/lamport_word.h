// The Lamport flag-in-data rules (docs/design.md section 4) on one 32-bit word, so that the cpu's
// Pack and the GPU's uint4 apply the same rules to each of their four words: the data is the flag.
//
// Staging is armed with the sentinel -0.0 in every lane. Producers map -0.0 to +0.0 before they
// store, so a stored value can never look like the sentinel. Consumers poll a pack until no word
// still equals the sentinel word, comparing bits: as floats, +0.0 == -0.0 (and with flush-to-zero
// negative subnormals too), which would make real zeros look "not arrived" forever.
#pragma once

#include <cstdint>

#include "worker/numerics/dtype.h"
#include "worker/numerics/host_device.h"

namespace colltest::protocol {

// The bits of -0.0 in one element of T.
template <DType D>
inline constexpr uint32_t kNegZeroBits = D == DType::kFp32 ? 0x80000000u : 0x8000u;

// -0.0 in every lane of a word (one fp32 lane, two 16-bit lanes, the low one first).
template <DType D>
COLLTEST_HD constexpr uint32_t SentinelWord() {
  return D == DType::kFp32 ? kNegZeroBits<D> : (kNegZeroBits<D> << 16) | kNegZeroBits<D>;
}

// Producer side: no lane may leave holding -0.0.
template <DType D>
COLLTEST_HD constexpr uint32_t CanonicalWord(uint32_t w) {
  if constexpr (D == DType::kFp32) {
    return w == kNegZeroBits<D> ? 0u : w;
  } else {
    if ((w & 0xffffu) == kNegZeroBits<D>) w &= 0xffff0000u;
    if ((w >> 16) == kNegZeroBits<D>) w &= 0x0000ffffu;
    return w;
  }
}

// Consumer side: a word has arrived when it no longer holds the sentinel bits; a pack has arrived
// when every one of its words has.
template <DType D>
COLLTEST_HD constexpr bool WordArrived(uint32_t w) {
  return w != SentinelWord<D>();
}

}  // namespace colltest::protocol
