// Accumulates the comparison of a kernel's quantised rows with the reference's over the rows of
// a check, as DiffChecker does for the outputs in T (docs/quantisation.md, section 4): the
// reference's out row, already rounded to T, is quantised by the rules and compared code by code
// and scale by scale with what the kernel wrote.
#pragma once

#include <cstdint>
#include <string>

#include "worker/numerics/dtype.h"
#include "worker/numerics/quant_diff.h"
#include "worker/numerics/quant_epilogue.h"
#include "worker/numerics/quant_plan.h"

namespace colltest {

struct QuantCheckSummary {
  uint64_t checked_codes = 0;
  uint64_t code_mismatches = 0;  // codes outside the tolerance
  uint64_t tolerated = 0;        // codes one step off that the ulp tolerance accepted
  uint32_t max_code_distance = 0;
  uint64_t nan_codes = 0;
  // Scales the kernel wrote (fp8_token's row scales, nvfp4's block scales); a given scale is
  // not the kernel's to get wrong.
  uint64_t checked_scales = 0;
  uint64_t scale_mismatches = 0;
  double max_scale_rel_err = 0;
  double max_dequant_err = 0;         // of the kernel's codes against y
  double expected_dequant_err = 0;    // of the reference's codes: the format's own error
  QuantRule rule = QuantRule::kNone;  // the rule the first bad row breaks
  std::string first_bad;              // "row 3: code[17] got 0x3a want 0x3b (scaled 13.5) (call 7)"
  int64_t first_bad_call = -1;
  bool passed = true;

  // What a check counts as its mismatches: at least 1 for a failing row that names no code or
  // scale (rows of the wrong shape).
  uint64_t failures() const {
    if (passed) return 0;
    return code_mismatches + scale_mismatches > 0 ? code_mismatches + scale_mismatches : 1;
  }
};

// The reference's quantisation of one row y of the normed output (rounded to T) under `plan`.
QuantizedRow QuantizeReferenceRow(const QuantPlan& plan, const float* y, uint32_t n);

// A kernel's quantised row as its buffers hold it: `codes` QuantCodeBytesPerRow bytes (nvfp4
// packed two a byte), `row_scale` fp8_token's scale, `block_scales` nvfp4's (each may be null
// where the scheme writes none); the given scales come from the plan.
QuantizedRow ReadQuantizedRow(const QuantPlan& plan, uint32_t n, const uint8_t* codes,
                              const float* row_scale, const uint8_t* block_scales);

class QuantChecker {
 public:
  // `plan` must have a scheme; `t` is the dtype the norm is stored in.
  QuantChecker(const QuantPlan& plan, DType t) : plan_(plan), dtype_(t) {}

  // Compares row `row` of call `call`: `y` the reference's out row, `got` the kernel's.
  void CompareRow(int64_t call, uint32_t row, const float* y, uint32_t n, const QuantizedRow& got);
  const QuantCheckSummary& Summary() const { return s_; }

 private:
  QuantPlan plan_;
  DType dtype_;
  QuantCheckSummary s_;
};

// Adds one check's tally to the case's: counts summed, maxima kept, the first bad row's rule,
// text and call kept from the first check that had one.
void MergeQuantCheck(const QuantCheckSummary& from, QuantCheckSummary* into);

}  // namespace colltest
