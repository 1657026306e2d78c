// The 16-byte pack: the unit every kernel loads, stores and polls, seen as four 32-bit words.
// Shared staging memory is read while peers write it, so every word access is a relaxed atomic.
#pragma once

#include <atomic>
#include <cstdint>

#include "worker/protocol/pack.h"

namespace colltest::cpu {

struct alignas(protocol::kPackBytes) Pack {
  uint32_t w[4];
};
static_assert(sizeof(Pack) == protocol::kPackBytes);

inline Pack LoadPack(const void* src) {
  auto* words = static_cast<uint32_t*>(const_cast<void*>(src));
  Pack p;
  for (int i = 0; i < 4; ++i)
    p.w[i] = std::atomic_ref<uint32_t>(words[i]).load(std::memory_order_relaxed);
  return p;
}

inline void StoreWords(void* dst, const uint32_t (&w)[4]) {
  auto* words = static_cast<uint32_t*>(dst);
  for (int i = 0; i < 4; ++i)
    std::atomic_ref<uint32_t>(words[i]).store(w[i], std::memory_order_relaxed);
}

inline void StorePack(void* dst, const Pack& p) { StoreWords(dst, p.w); }

}  // namespace colltest::cpu
