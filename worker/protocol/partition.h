// The reduce-scatter split of the flattened m x n tensor into packs: rank r reduces
// [PartOf(r).begin, PartOf(r).end), and OwnerOf names the rank a consumer waits for.
#pragma once

#include <cstddef>
#include <cstdint>

#include "worker/numerics/host_device.h"

namespace colltest::protocol {

struct Part {
  size_t begin, end;
};

COLLTEST_HD Part PartOf(size_t packs, uint32_t world, uint32_t rank) {
  return {packs * rank / world, packs * (rank + 1) / world};
}

// The rank whose part holds `pack` (pack < packs): a first guess by proportion, then corrected
// by at most a step either way for the rounding of PartOf.
COLLTEST_HD uint32_t OwnerOf(size_t pack, size_t packs, uint32_t world) {
  const size_t guess = pack * world / packs;
  uint32_t r = static_cast<uint32_t>(guess < world - 1 ? guess : world - 1);
  while (r + 1 < world && PartOf(packs, world, r + 1).begin <= pack) ++r;
  while (r > 0 && PartOf(packs, world, r).begin > pack) --r;
  return r;
}

}  // namespace colltest::protocol
