#include "server/workers/case_merge.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "common/element_size.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
namespace wv1 = ::colltest::worker::v1;

v1::CaseResult Header(uint32_t index, absl::Span<const uint32_t> devices,
                      const wv1::CaseRequest& request) {
  v1::CaseResult c;
  c.set_index(index);
  c.set_variant(request.variant());
  c.set_mode(request.mode());
  c.set_world_size(static_cast<uint32_t>(devices.size()));
  c.set_m(request.m());
  c.set_n(request.n());
  c.set_dtype(request.dtype());
  c.set_pattern(request.pattern());
  c.set_residual(request.residual());
  c.set_stress_calls(request.stress_calls());
  const v1::Epilogue epilogue =
      request.epilogue() == v1::EPILOGUE_UNSPECIFIED ? v1::EPILOGUE_NONE : request.epilogue();
  c.set_epilogue(epilogue);
  // keep_normed only means something next to a quantising epilogue: without one `out` is always
  // written, and a case of a keep_normed sweep would otherwise not match the same case without it.
  c.set_keep_normed(request.keep_normed() && epilogue != v1::EPILOGUE_NONE);
  c.mutable_quant()->set_first_bad_call(-1);
  // `auto` picks its variant inside the worker, which does not report it back per case yet.
  if (request.variant() != v1::VARIANT_AUTO) c.set_resolved_variant(request.variant());
  return c;
}

// Puts the replies in rank order and fills the gaps, so that everything below can index by rank.
std::vector<v1::RankResult> ByRank(absl::Span<const uint32_t> devices,
                                   std::vector<v1::RankResult> replies) {
  const uint32_t world = static_cast<uint32_t>(devices.size());
  std::vector<std::optional<v1::RankResult>> slots(world);
  for (v1::RankResult& r : replies) {
    if (r.rank() < world && !slots[r.rank()]) slots[r.rank()] = std::move(r);
  }
  std::vector<v1::RankResult> out;
  out.reserve(world);
  for (uint32_t rank = 0; rank < world; ++rank) {
    v1::RankResult r = slots[rank] ? std::move(*slots[rank]) : NoResultFrom(rank, devices[rank]);
    RequireStatus(r);
    out.push_back(std::move(r));
  }
  return out;
}

void MergeTiming(absl::Span<const v1::RankResult> ranks, v1::TimingStats& t) {
  for (const v1::RankResult& r : ranks) {
    const v1::TimingStats& rt = r.timing();
    t.set_median_us(std::max(t.median_us(), rt.median_us()));
    t.set_p10_us(std::max(t.p10_us(), rt.p10_us()));
    t.set_p90_us(std::max(t.p90_us(), rt.p90_us()));
    t.set_min_us(std::max(t.min_us(), rt.min_us()));
    t.set_max_us(std::max(t.max_us(), rt.max_us()));
    t.set_samples(std::max(t.samples(), rt.samples()));
  }
}

void MergeDiff(absl::Span<const v1::RankResult> ranks, v1::DiffStats& d) {
  d.set_first_bad_call(-1);
  for (const v1::RankResult& r : ranks) {
    const v1::DiffStats& rd = r.diff();
    d.set_mismatches(d.mismatches() + rd.mismatches());
    d.set_checked(d.checked() + rd.checked());
    d.set_nan_inf(d.nan_inf() + rd.nan_inf());
    d.set_max_abs_err(std::max(d.max_abs_err(), rd.max_abs_err()));
    d.set_max_rel_err(std::max(d.max_rel_err(), rd.max_rel_err()));
    d.set_max_ulp(std::max(d.max_ulp(), rd.max_ulp()));
    // Ranks are in order, so the first one seen is the lowest rank's.
    if (d.first_bad().empty() && !rd.first_bad().empty()) d.set_first_bad(rd.first_bad());
    if (rd.first_bad_call() >= 0 &&
        (d.first_bad_call() < 0 || rd.first_bad_call() < d.first_bad_call())) {
      d.set_first_bad_call(rd.first_bad_call());
    }
  }
}

// Whether a rank reported a bad quantised row. Its first_bad_call alone does not tell: a rank
// without a quantising epilogue leaves the stats unset, and an unset call reads 0.
bool HasBadQuantRow(const v1::QuantDiffStats& q) {
  return q.code_mismatches() > 0 || q.scale_mismatches() > 0 || !q.first_bad().empty() ||
         q.rule() != v1::QUANT_RULE_UNSPECIFIED;
}

// The rank whose quantised output went wrong first: the earliest first_bad_call, ties to the lowest
// rank; a bad rank that gives no call only when none gives one. Null when no rank went wrong.
const v1::RankResult* FirstBadQuantRank(absl::Span<const v1::RankResult> ranks) {
  const v1::RankResult* first = nullptr;
  const v1::RankResult* without_call = nullptr;
  for (const v1::RankResult& r : ranks) {
    if (!HasBadQuantRow(r.quant())) continue;
    const int64_t call = r.quant().first_bad_call();
    if (call < 0) {
      if (without_call == nullptr) without_call = &r;
    } else if (first == nullptr || call < first->quant().first_bad_call()) {
      first = &r;
    }
  }
  return first != nullptr ? first : without_call;
}

// Counts add up over the ranks, errors and distances take the worst rank's; the first bad row,
// its call and the rule it breaks come from the rank that went wrong first.
void MergeQuant(absl::Span<const v1::RankResult> ranks, v1::QuantDiffStats& q) {
  q.set_first_bad_call(-1);
  for (const v1::RankResult& r : ranks) {
    const v1::QuantDiffStats& rq = r.quant();
    q.set_checked_codes(q.checked_codes() + rq.checked_codes());
    q.set_code_mismatches(q.code_mismatches() + rq.code_mismatches());
    q.set_tolerated(q.tolerated() + rq.tolerated());
    q.set_nan_codes(q.nan_codes() + rq.nan_codes());
    q.set_checked_scales(q.checked_scales() + rq.checked_scales());
    q.set_scale_mismatches(q.scale_mismatches() + rq.scale_mismatches());
    q.set_max_code_distance(std::max(q.max_code_distance(), rq.max_code_distance()));
    q.set_max_scale_rel_err(std::max(q.max_scale_rel_err(), rq.max_scale_rel_err()));
    q.set_max_dequant_err(std::max(q.max_dequant_err(), rq.max_dequant_err()));
    q.set_expected_dequant_err(std::max(q.expected_dequant_err(), rq.expected_dequant_err()));
  }
  if (const v1::RankResult* first = FirstBadQuantRank(ranks)) {
    q.set_first_bad(first->quant().first_bad());
    q.set_first_bad_call(first->quant().first_bad_call());
    q.set_rule(first->quant().rule());
  }
}

}  // namespace

v1::CaseResult MergeCase(uint32_t index, absl::Span<const uint32_t> devices,
                         const wv1::CaseRequest& request, std::vector<v1::RankResult> replies) {
  v1::CaseResult c = Header(index, devices, request);
  std::vector<v1::RankResult> ranks = ByRank(devices, std::move(replies));

  const CaseDecision verdict = CaseVerdict(ranks);
  c.set_status(verdict.status);
  c.set_message(verdict.message);

  MergeTiming(ranks, *c.mutable_timing());
  MergeDiff(ranks, *c.mutable_diff());
  MergeQuant(ranks, *c.mutable_quant());
  // What the worker wrote, which for an unset format only the worker knows; every rank of a group
  // runs on the same kind of device.
  if (!ranks.empty()) c.set_fp8_format(ranks.front().fp8_format());

  const double median_s = c.timing().median_us() * 1e-6;
  if (median_s > 0) {
    const double bytes =
        static_cast<double>(request.m()) * request.n() * common::ElementBytes(request.dtype());
    const double world = static_cast<double>(devices.size());
    c.set_algbw_gbps(bytes / median_s / 1e9);
    c.set_busbw_gbps(c.algbw_gbps() * 2.0 * (world - 1.0) / world);
  }

  for (v1::RankResult& r : ranks) *c.add_ranks() = std::move(r);
  return c;
}

v1::CaseResult UnsupportedCase(uint32_t index, absl::Span<const uint32_t> devices,
                               const wv1::CaseRequest& request, const std::string& reason) {
  v1::CaseResult c = Header(index, devices, request);
  c.set_status(v1::CASE_STATUS_UNSUPPORTED);
  c.set_message(reason);
  c.mutable_diff()->set_first_bad_call(-1);
  return c;
}

v1::CaseResult FailedCase(uint32_t index, absl::Span<const uint32_t> devices,
                          const wv1::CaseRequest& request, const absl::Status& error) {
  v1::CaseResult c = Header(index, devices, request);
  const CaseDecision verdict = PoolFailureVerdict(error);
  c.set_status(verdict.status);
  c.set_message(verdict.message);
  c.mutable_diff()->set_first_bad_call(-1);
  return c;
}

}  // namespace colltest::server
