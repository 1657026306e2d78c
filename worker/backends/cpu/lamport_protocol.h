// The Lamport flag-in-data rules (worker/protocol/lamport_word.h) applied to the cpu's Pack, one
// 32-bit word at a time, exactly as the GPU applies them to a uint4.
#pragma once

#include <cstdint>
#include <cstring>

#include "worker/backends/cpu/elem.h"
#include "worker/backends/cpu/pack.h"
#include "worker/protocol/lamport_word.h"

namespace colltest::cpu {

using protocol::SentinelWord;

template <DType D>
constexpr Pack SentinelPack() {
  constexpr uint32_t w = SentinelWord<D>();
  return Pack{{w, w, w, w}};
}

// Producer side: no lane may leave holding -0.0.
template <DType D>
Pack Canonicalize(Pack p) {
  for (uint32_t& w : p.w) w = protocol::CanonicalWord<D>(w);
  return p;
}

// Consumer side: arrived when every word has.
template <DType D>
bool Arrived(const Pack& p) {
  for (uint32_t w : p.w) {
    if (!protocol::WordArrived<D>(w)) return false;
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
