// Independent host reference of the fused op (docs/design.md section 3): the all-reduce in fp32 in
// rank order rounded to T, the residual add rounded to T, and the RMSNorm in fp64 rounded to T.
#pragma once

#include <cstdint>
#include <vector>

#include "worker/numerics/dtype.h"
#include "worker/numerics/input_hash.h"
#include "worker/numerics/progress.h"

namespace colltest {

struct CaseShape {
  DType dtype = DType::kBf16;
  Pattern pattern = Pattern::kNormal;
  uint32_t world = 2;
  uint32_t m = 1;
  uint32_t n = 128;
  bool residual = true;
  float eps = 1e-6f;
  uint64_t seed = 0;
};

struct ReferenceRows {
  std::vector<float> residual_out;  // m * n, row-major; the all-reduce result when !residual
  std::vector<float> out;           // m * n
};

// Regenerates every rank's input for `call` and computes what every rank must output, calling
// `progress` once per row.
ReferenceRows ComputeReference(const CaseShape& shape, uint64_t call, Progress progress = nullptr);

}  // namespace colltest
