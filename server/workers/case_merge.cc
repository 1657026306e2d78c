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
