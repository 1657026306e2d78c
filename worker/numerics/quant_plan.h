// The quantising epilogue of one case (docs/quantisation.md), resolved from the request by the
// worker's case configuration: what a kernel's last stage writes after the norm, where in its
// row-major buffers, and how the check compares it.
#pragma once

#include <cstdint>
#include <optional>

#include "worker/numerics/fp8.h"
#include "worker/numerics/quant_diff.h"
#include "worker/numerics/quant_epilogue.h"

namespace colltest {

struct QuantPlan {
  // nullopt: no quantising epilogue, the kernel writes the normed output in T only.
  std::optional<QuantScheme> scheme;
  Fp8Format format = Fp8Format::kE4m3fn;  // element format of the fp8 schemes
  // The given scales (positive and finite; the case configuration puts the defaults in).
  float fp8_scale = 1.0f;           // fp8_tensor: y ~ code x scale
  float nvfp4_global_scale = 1.0f;  // nvfp4: y ~ E2M1 x block scale / global scale
  // With a quantising epilogue, write (and check) the normed output in T as well.
  bool keep_normed = false;
  QuantTolerance tolerance = QuantTolerance::kStrict;
  // Planted bugs (QuantBreak flags of quant_breaks.h, from the case's quant_* fault); 0 otherwise.
  uint32_t breaks = 0;

  bool writes_out() const { return !scheme.has_value() || keep_normed; }
  bool is_fp8() const { return scheme.has_value() && *scheme != QuantScheme::kNvfp4; }
};

// Bytes of element codes per row: one fp8 code per element, or two E2M1 codes a byte.
inline uint32_t QuantCodeBytesPerRow(const QuantPlan& plan, uint32_t n) {
  return plan.scheme == QuantScheme::kNvfp4 ? Nvfp4RowBytes(n) : n;
}
// fp32 scales per row the kernel writes: fp8_token's dynamic one; the others' scale is given.
inline uint32_t QuantRowScalesPerRow(const QuantPlan& plan) {
  return plan.scheme == QuantScheme::kFp8Token ? 1 : 0;
}
// e4m3fn block scales per row: nvfp4's, one per block of 16 (the last block may be short).
inline uint32_t QuantBlockScalesPerRow(const QuantPlan& plan, uint32_t n) {
  return plan.scheme == QuantScheme::kNvfp4 ? Nvfp4RowBlocks(n) : 0;
}

}  // namespace colltest
