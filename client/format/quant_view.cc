#include "client/format/quant_view.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/names.h"

namespace colltest::client {
namespace {

// QuantDiffStats.max_code_distance when a NaN code was got or wanted (the proto's comment).
constexpr uint32_t kNanCodeDistance = std::numeric_limits<uint32_t>::max();

}  // namespace

bool QuantisingEpilogue(v1::Epilogue epilogue) {
  return epilogue == v1::EPILOGUE_FP8_TOKEN || epilogue == v1::EPILOGUE_FP8_TENSOR ||
         epilogue == v1::EPILOGUE_NVFP4;
}

bool QuantisingEpilogue(const v1::CaseResult& c) { return QuantisingEpilogue(c.epilogue()); }

bool AnyQuantisingEpilogue(const v1::RunResult& run) {
  for (const v1::CaseResult& c : run.cases()) {
    if (QuantisingEpilogue(c)) return true;
  }
  return false;
}

std::string EpilogueLabel(v1::Epilogue epilogue, bool keep_normed) {
  const bool normed = QuantisingEpilogue(epilogue) && keep_normed;
  return absl::StrCat(common::EpilogueName(epilogue), normed ? "+normed" : "");
}

std::string EpilogueLabel(const v1::CaseResult& c) {
  return EpilogueLabel(c.epilogue(), c.keep_normed());
}

bool QuantChecked(const v1::QuantDiffStats& q) {
  return q.checked_codes() > 0 || q.checked_scales() > 0 || q.code_mismatches() > 0 ||
         q.scale_mismatches() > 0;
}

std::string QuantCell(const v1::QuantDiffStats& q) {
  if (!QuantChecked(q)) return "-";
  if (q.code_mismatches() == 0 && q.scale_mismatches() == 0) return "0";
  std::vector<std::string> parts;
  if (q.code_mismatches() > 0) {
    const std::string distance = q.max_code_distance() == kNanCodeDistance
                                     ? std::string("nan")
                                     : absl::StrCat(q.max_code_distance());
    parts.push_back(absl::StrCat(q.code_mismatches(), q.code_mismatches() == 1 ? " code" : " codes",
                                 " (d ", distance, ")"));
  }
  if (q.scale_mismatches() > 0) {
    parts.push_back(
        absl::StrCat(q.scale_mismatches(), q.scale_mismatches() == 1 ? " scale" : " scales"));
  }
  if (q.rule() != v1::QUANT_RULE_UNSPECIFIED) parts.emplace_back(common::QuantRuleName(q.rule()));
  return absl::StrJoin(parts, ", ");
}

}  // namespace colltest::client
