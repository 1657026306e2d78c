#include "worker/rank_report.h"

#include <algorithm>
#include <cmath>
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

}  // namespace colltest::worker
