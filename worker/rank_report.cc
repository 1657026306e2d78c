#include "worker/rank_report.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/timing_stats.h"

namespace colltest::worker {

colltest::v1::RankResult NewRankResult(uint32_t rank, uint32_t device) {
  colltest::v1::RankResult result;
  result.set_rank(rank);
  result.set_device(device);
  result.set_suspect_peer(-1);
  return result;
}

colltest::v1::RankResult Unsupported(colltest::v1::RankResult result, const std::string& why) {
  result.set_status(colltest::v1::CASE_STATUS_UNSUPPORTED);
  result.set_message(why);
  return result;
}

void MergeDiff(const DiffSummary& from, double min_pass_fraction, DiffSummary* into) {
  DiffSummary& s = *into;
  s.mismatches += from.mismatches;
  s.checked += from.checked;
  s.nan_inf += from.nan_inf;
  s.max_abs_err = std::max(s.max_abs_err, from.max_abs_err);
  s.max_rel_err = std::max(s.max_rel_err, from.max_rel_err);
  s.max_ulp = std::max(s.max_ulp, from.max_ulp);
  if (!from.first_bad.empty() && s.first_bad.empty()) {
    s.first_bad = from.first_bad;
    s.first_bad_call = from.first_bad_call;
  }
  // The slack absorbs 1 - 0.99 not being exact in binary, so 1 bad in 100 counts as 1%.
  const double allowed =
      std::floor((1.0 - min_pass_fraction) * static_cast<double>(s.checked) + 1e-6);
  s.passed = static_cast<double>(s.mismatches) <= allowed;
}

void ReportCase(absl::string_view variant, int64_t calls, uint32_t grid_blocks,
                std::vector<double> samples_us, const DiffSummary& d, bool hung,
                colltest::v1::RankResult* result) {
  result->set_calls(static_cast<uint32_t>(calls));
  result->set_grid_blocks(grid_blocks);
  *result->mutable_timing() = Summarize(std::move(samples_us));
  auto* diff = result->mutable_diff();
  diff->set_mismatches(d.mismatches);
  diff->set_checked(d.checked);
  diff->set_max_abs_err(d.max_abs_err);
  diff->set_max_rel_err(d.max_rel_err);
  diff->set_max_ulp(d.max_ulp);
  diff->set_nan_inf(d.nan_inf);
  diff->set_first_bad(d.first_bad);
  diff->set_first_bad_call(d.first_bad_call);
  if (hung) return;
  if (!d.passed) {
    result->set_status(colltest::v1::CASE_STATUS_WRONG);
    result->set_message(absl::StrCat(variant, ": ", d.mismatches, " of ", d.checked,
                                     " elements outside tolerance; first ", d.first_bad));
  } else {
    result->set_status(colltest::v1::CASE_STATUS_OK);
  }
}

namespace {

colltest::v1::QuantRule ToProto(QuantRule r) {
  switch (r) {
    case QuantRule::kNone:
      return colltest::v1::QUANT_RULE_UNSPECIFIED;
    case QuantRule::kScale:
      return colltest::v1::QUANT_RULE_SCALE;
    case QuantRule::kFormat:
      return colltest::v1::QUANT_RULE_FORMAT;
    case QuantRule::kSaturation:
      return colltest::v1::QUANT_RULE_SATURATION;
    case QuantRule::kRounding:
      return colltest::v1::QUANT_RULE_ROUNDING;
    case QuantRule::kUnexplained:
      return colltest::v1::QUANT_RULE_UNEXPLAINED;
  }
  return colltest::v1::QUANT_RULE_UNEXPLAINED;
}

colltest::v1::Fp8Format ToProto(Fp8Format f) {
  return f == Fp8Format::kE4m3fn ? colltest::v1::FP8_FORMAT_E4M3FN
                                 : colltest::v1::FP8_FORMAT_E4M3FNUZ;
}

void FillQuantStats(const QuantCheckSummary& q, colltest::v1::QuantDiffStats* out) {
  out->set_checked_codes(q.checked_codes);
  out->set_code_mismatches(q.code_mismatches);
  out->set_tolerated(q.tolerated);
  out->set_max_code_distance(q.max_code_distance);
  out->set_nan_codes(q.nan_codes);
  out->set_checked_scales(q.checked_scales);
  out->set_scale_mismatches(q.scale_mismatches);
  out->set_max_scale_rel_err(q.max_scale_rel_err);
  out->set_max_dequant_err(q.max_dequant_err);
  out->set_expected_dequant_err(q.expected_dequant_err);
  out->set_rule(ToProto(q.rule));
  out->set_first_bad(q.first_bad);
  out->set_first_bad_call(q.first_bad_call);
}

}  // namespace

void RenameFirstBadCall(std::string& first_bad, int64_t& first_bad_call, int64_t call,
                        const std::string& note) {
  if (first_bad.empty()) return;
  const size_t at = first_bad.rfind(" (call ");
  if (at != std::string::npos) first_bad.resize(at);
  absl::StrAppend(&first_bad, " (call ", call, note, ")");
  first_bad_call = call;
}

void ReportQuant(absl::string_view variant, const QuantPlan& plan, const QuantCheckSummary& q,
                 bool hung, colltest::v1::RankResult* result) {
  if (!plan.scheme.has_value()) return;
  FillQuantStats(q, result->mutable_quant());
  if (plan.is_fp8()) result->set_fp8_format(ToProto(plan.format));
  if (hung || q.passed) return;
  const std::string what =
      absl::StrCat(QuantSchemeName(*plan.scheme), " breaks the ", QuantRuleName(q.rule),
                   " rule: ", q.code_mismatches, " of ", q.checked_codes, " codes and ",
                   q.scale_mismatches, " of ", q.checked_scales, " scales outside the ",
                   QuantToleranceName(plan.tolerance), " tolerance; first ", q.first_bad);
  if (result->status() == colltest::v1::CASE_STATUS_WRONG) {
    result->set_message(absl::StrCat(result->message(), "; ", what));
  } else {
    result->set_status(colltest::v1::CASE_STATUS_WRONG);
    result->set_message(absl::StrCat(variant, ": ", what));
  }
}

}  // namespace colltest::worker
