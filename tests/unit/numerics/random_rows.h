// Rows of normed outputs for the quantisation tests: normal values already rounded to bf16, as a
// kernel's norm output is before its epilogue quantises it.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "worker/numerics/dtype.h"

namespace colltest {

inline std::vector<float> RandomBf16Row(uint32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> y(n);
  for (float& v : y) v = RoundTo(DType::kBf16, normal(rng));
  return y;
}

}  // namespace colltest
