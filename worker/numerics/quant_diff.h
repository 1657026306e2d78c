// Compares a quantised row a kernel wrote with the reference of quant_epilogue.h and names the
// quantisation rule a mismatch breaks where the codes tell it (docs/quantisation.md).
#pragma once

#include <cstdint>
#include <string>

#include "worker/numerics/dtype.h"
#include "worker/numerics/quant_epilogue.h"

namespace colltest {

// The rule a row's mismatches break, checked in this order:
//   scale:       a scale differs (codes_follow_actual_scales tells whether the codes are right
//                for the scales written, i.e. only the scale is wrong);
//   format:      every bad fp8 code is what the other fp8 format encodes (or decodes to the
//                wanted value under it), at least one of them inside the finite range;
//   saturation:  a bad code where the scaled value is past the largest finite (got a NaN code,
//                or a code other than the largest finite of the right sign);
//   rounding:    every bad code is the other neighbour of the scaled value (e.g. truncation,
//                ties not to even);
//   unexplained: none of these accounts for every bad code.
enum class QuantRule : uint8_t { kNone, kScale, kFormat, kSaturation, kRounding, kUnexplained };
const char* QuantRuleName(QuantRule r);

// strict: codes and scales exact, but for +0 against -0: one value, as in the T diff (the Lamport
//         variants carry -0.0 as +0.0, their sentinel being -0.0's bits).
// ulp:    scales exact; a code one step from the wanted one is accepted only where the two codes'
//         midpoint, taken back to y's units and rounded to T, is y itself rounded to T: the value
//         is a tie once it has been through T, so a kernel that quantises its fp32 norm before
//         rounding it to T may land on either side.
// The per-code rule of both is quant_code_rule.h, shared with the GPU check kernel.
enum class QuantTolerance : uint8_t { kStrict, kUlp };
const char* QuantToleranceName(QuantTolerance t);

// Code distance in value order when either code is an fp8 NaN.
constexpr uint32_t kNanCodeDistance = UINT32_MAX;

struct QuantDiffSummary {
  uint64_t checked = 0;
  uint64_t code_mismatches = 0;  // codes that differ, tolerated or not
  uint64_t tolerated = 0;        // of those, accepted by the ulp tolerance
  uint32_t max_code_distance = 0;
  uint64_t nan_codes = 0;  // NaN codes got where a number was wanted
  uint64_t scale_mismatches = 0;
  double max_scale_rel_err = 0;  // over the fp8 scale, or the nvfp4 block scales and global scale
  bool codes_follow_actual_scales = true;
  // max |dequantised - y| of the actual row, and of the expected row (the format's own error).
  double max_dequant_err = 0;
  double expected_dequant_err = 0;
  // Bad (untolerated) codes by the rule each one is consistent with.
  uint64_t saturation_codes = 0;
  uint64_t format_codes = 0;
  uint64_t rounding_codes = 0;
  QuantRule rule = QuantRule::kNone;
  std::string first_bad;  // "code[17] got 0x3a want 0x3b (scaled 13.5)"
  bool passed = true;
};

// `y` is the row both were quantised from (n elements), T the dtype the norm is stored in.
QuantDiffSummary CompareQuantizedRow(const QuantizedRow& expected, const QuantizedRow& actual,
                                     const float* y, uint32_t n, DType t, QuantTolerance tolerance);

}  // namespace colltest
