// A 64-bit hash whose value never changes with a library, a compiler or a process (std::hash and
// absl::Hash are free to change, and absl::Hash is seeded per process): FNV-1a. Used where a hash
// is stored or compared across processes (machine keys, the history's machine rows).
#pragma once

#include <cstdint>

#include "absl/strings/string_view.h"

namespace colltest::common {

inline constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ull;

// Folds `bytes` into `hash` (start from kFnv1aOffset).
inline void Fnv1aAppend(uint64_t& hash, absl::string_view bytes) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
}

inline uint64_t Fnv1a(absl::string_view bytes) {
  uint64_t hash = kFnv1aOffset;
  Fnv1aAppend(hash, bytes);
  return hash;
}

}  // namespace colltest::common
