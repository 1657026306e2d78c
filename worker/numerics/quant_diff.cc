#include "worker/numerics/quant_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "worker/numerics/dtype.h"
#include "worker/numerics/fp4.h"
#include "worker/numerics/fp8.h"
#include "worker/numerics/host_rounding.h"
#include "worker/numerics/quant_code_rule.h"
#include "worker/numerics/quant_epilogue.h"

namespace colltest {

const char* QuantRuleName(QuantRule r) {
  switch (r) {
    case QuantRule::kNone:
      return "none";
    case QuantRule::kScale:
      return "scale";
    case QuantRule::kFormat:
      return "format";
    case QuantRule::kSaturation:
      return "saturation";
    case QuantRule::kRounding:
      return "rounding";
    case QuantRule::kUnexplained:
      return "unexplained";
  }
  return "unknown";
}

const char* QuantToleranceName(QuantTolerance t) {
  return t == QuantTolerance::kStrict ? "strict" : "ulp";
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool IsNvfp4(const QuantizedRow& row) { return row.scheme == QuantScheme::kNvfp4; }

// Element i's codes and the scale that took its y into code units (quant_code_rule.h).
ElementCodes ElementCodesOf(const QuantizedRow& row, uint32_t i) {
  ElementCodes e;
  e.scheme = row.scheme;
  e.format = row.format;
  switch (row.scheme) {
    case QuantScheme::kFp8Token:
      e.scale = row.scale;
      break;
    case QuantScheme::kFp8Tensor:
      e.scale = Fp8TensorInverse(row.scale);
      break;
    case QuantScheme::kNvfp4:
      e.scale = Nvfp4OutputScale(row.block_scales[i / kNvfp4BlockElems], row.scale);
      break;
  }
  return e;
}

float ElementMaxFinite(const QuantizedRow& row) {
  return IsNvfp4(row) ? kE2m1MaxFinite : Fp8MaxFinite(row.format);
}

double RelErr(double got, double want) {
  if (got == want) return 0;
  return want != 0 ? std::fabs(got - want) / std::fabs(want) : kInf;
}

// Both scales as numbers: +0 and -0 agree, NaNs never do.
bool SameScale(float got, float want) { return got == want; }

void NoteFirstBad(QuantDiffSummary& s, const std::string& what) {
  if (s.first_bad.empty()) s.first_bad = what;
}

std::string CodeText(const char* what, uint32_t i, uint8_t got, uint8_t want, double scaled) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s[%u] got 0x%02x want 0x%02x (scaled %.9g)", what, i, got, want,
                scaled);
  return buf;
}

void CompareBlockScales(const QuantizedRow& expected, const QuantizedRow& actual,
                        QuantDiffSummary& s) {
  for (uint32_t b = 0; b < expected.block_scales.size(); ++b) {
    const uint8_t want = expected.block_scales[b];
    const uint8_t got = actual.block_scales[b];
    if (got == want) continue;
    ++s.scale_mismatches;
    s.max_scale_rel_err =
        std::max(s.max_scale_rel_err,
                 RelErr(DecodeFp8(Fp8Format::kE4m3fn, got), DecodeFp8(Fp8Format::kE4m3fn, want)));
    NoteFirstBad(s, CodeText("block_scale", b, got, want, 0));
  }
}

void CompareScales(const QuantizedRow& expected, const QuantizedRow& actual, const float* y,
                   uint32_t n, QuantDiffSummary& s) {
  if (!SameScale(actual.scale, expected.scale)) {
    ++s.scale_mismatches;
    s.max_scale_rel_err = RelErr(actual.scale, expected.scale);
    char buf[120];
    std::snprintf(buf, sizeof buf, "%s got %.9g want %.9g",
                  IsNvfp4(expected) ? "global_scale" : "scale", actual.scale, expected.scale);
    NoteFirstBad(s, buf);
  }
  if (IsNvfp4(expected)) CompareBlockScales(expected, actual, s);
  if (s.scale_mismatches == 0) return;
  for (uint32_t i = 0; i < n && s.codes_follow_actual_scales; ++i) {
    s.codes_follow_actual_scales =
        EncodeElement(actual, ScaledElement(actual, y, i)) == actual.codes[i];
  }
}

struct ElementVerdict {
  bool saturation = false;
  bool format = false;
  bool format_in_range = false;
  bool rounding = false;
};

ElementVerdict ClassifyElement(const QuantizedRow& expected, float scaled, uint8_t got,
                               uint8_t want, uint32_t distance) {
  ElementVerdict v;
  v.saturation = !std::isnan(scaled) && std::fabs(scaled) > ElementMaxFinite(expected);
  if (!IsNvfp4(expected)) {
    const Fp8Format other = OtherFp8Format(expected.format);
    v.format = got == EncodeFp8(other, scaled) ||
               DecodeFp8(other, got) == DecodeFp8(expected.format, want);
    v.format_in_range = v.format && !v.saturation;
  }
  if (!v.saturation && distance == 1) {
    const double a = DecodeElement(expected, got);
    const double w = DecodeElement(expected, want);
    v.rounding = scaled != w && std::min(a, w) <= scaled && scaled <= std::max(a, w);
  }
  return v;
}

QuantRule RowRule(const QuantDiffSummary& s, uint64_t bad, uint64_t format_in_range) {
  if (s.scale_mismatches > 0) return QuantRule::kScale;
  if (bad == 0) return QuantRule::kNone;
  if (s.format_codes == bad && format_in_range > 0) return QuantRule::kFormat;
  if (s.saturation_codes > 0) return QuantRule::kSaturation;
  if (s.rounding_codes == bad) return QuantRule::kRounding;
  return QuantRule::kUnexplained;
}

void CompareDequantised(const QuantizedRow& expected, const QuantizedRow& actual, const float* y,
                        uint32_t n, QuantDiffSummary& s) {
  for (uint32_t i = 0; i < n; ++i) {
    const double got = DequantizeElement(actual, i);
    const double want = DequantizeElement(expected, i);
    const double got_err = std::isfinite(got) ? std::fabs(got - y[i]) : kInf;
    const double want_err = std::isfinite(want) ? std::fabs(want - y[i]) : kInf;
    s.max_dequant_err = std::max(s.max_dequant_err, got_err);
    s.expected_dequant_err = std::max(s.expected_dequant_err, want_err);
  }
}

bool ShapesAgree(const QuantizedRow& expected, const QuantizedRow& actual, uint32_t n,
                 QuantDiffSummary& s) {
  if (expected.codes.size() == n && actual.codes.size() == n &&
      actual.block_scales.size() == expected.block_scales.size() &&
      actual.scheme == expected.scheme && actual.format == expected.format) {
    return true;
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "shape: got %zu codes and %zu block scales, want %u and %zu",
                actual.codes.size(), actual.block_scales.size(), n, expected.block_scales.size());
  s.first_bad = buf;
  s.rule = QuantRule::kUnexplained;
  s.passed = false;
  return false;
}

}  // namespace

QuantDiffSummary CompareQuantizedRow(const QuantizedRow& expected, const QuantizedRow& actual,
                                     const float* y, uint32_t n, DType t,
                                     QuantTolerance tolerance) {
  QuantDiffSummary s;
  if (!ShapesAgree(expected, actual, n, s)) return s;
  s.checked = n;
  CompareScales(expected, actual, y, n, s);
  uint64_t bad = 0;
  uint64_t format_in_range = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint8_t got = actual.codes[i];
    const uint8_t want = expected.codes[i];
    if (got == want) continue;
    ++s.code_mismatches;
    const ElementCodes e = ElementCodesOf(expected, i);
    const uint32_t distance = ElementCodeDistance(e, got, want);
    s.max_code_distance = std::max(s.max_code_distance, distance);
    if (IsNanElementCode(e, got) && !IsNanElementCode(e, want)) ++s.nan_codes;
    // The same rule as the GPU check kernel's (quant_code_rule.h), +0 and -0 one value in both
    // tolerances.
    if (ElementCodeAccepted<HostRounding>(tolerance, e, got, want, y[i], t)) {
      ++s.tolerated;
      continue;
    }
    ++bad;
    const float scaled = ScaledElement(expected, y, i);
    const ElementVerdict v = ClassifyElement(expected, scaled, got, want, distance);
    s.saturation_codes += v.saturation;
    s.format_codes += v.format;
    format_in_range += v.format_in_range;
    s.rounding_codes += v.rounding;
    NoteFirstBad(s, CodeText("code", i, got, want, scaled));
  }
  CompareDequantised(expected, actual, y, n, s);
  s.rule = RowRule(s, bad, format_in_range);
  s.passed = s.rule == QuantRule::kNone;
  return s;
}

}  // namespace colltest
