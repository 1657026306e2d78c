#include "server/case_merge.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/names.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
namespace wv1 = ::colltest::worker::v1;

// "rank 2" or "ranks 0, 2, 3".
std::string RankList(const std::vector<uint32_t>& ranks) {
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ", absl::StrJoin(ranks, ", "));
}

// "rank 2: <text>", unless the text already starts by naming that rank (the worker pool writes
// "rank 2 did not answer within 3s"): "rank 2: rank 2 did not ..." reads like a stutter.
std::string Attributed(uint32_t rank, const std::string& text) {
  const std::string name = absl::StrCat("rank ", rank);
  if (absl::StartsWith(text, name) &&
      (text.size() == name.size() || !absl::ascii_isdigit(text[name.size()]))) {
    return text;
  }
  return absl::StrCat(name, ": ", text);
}

std::string InPhase(const std::string& phase) {
  return phase.empty() ? std::string() : absl::StrCat(" in ", phase);
}

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
    v1::RankResult r;
    if (slots[rank]) {
      r = std::move(*slots[rank]);
    } else {
      r.set_rank(rank);
      r.set_device(devices[rank]);
      r.set_status(v1::CASE_STATUS_ERROR);
      r.set_message("no result from this rank");
      r.set_suspect_peer(-1);
    }
    if (r.status() == v1::CASE_STATUS_UNSPECIFIED || !v1::CaseStatus_IsValid(r.status())) {
      r.set_status(v1::CASE_STATUS_ERROR);
      if (r.message().empty()) r.set_message("the worker returned no status");
    }
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

// A rank the pool aborted because another one failed: a consequence, not the culprit.
bool IsAbortedByAnother(const v1::RankResult& r) {
  return absl::StartsWith(r.message(), "aborted:");
}

// The message of the lowest rank with the worst status (preferring the rank that failed over
// those aborted because of it), and which other ranks share the status.
std::string WorstRankMessage(absl::Span<const v1::RankResult> ranks, v1::CaseStatus worst) {
  const v1::RankResult* first = nullptr;
  for (const v1::RankResult& r : ranks) {
    if (r.status() != worst) continue;
    if (first == nullptr || (IsAbortedByAnother(*first) && !IsAbortedByAnother(r))) first = &r;
  }
  std::vector<uint32_t> others;
  for (const v1::RankResult& r : ranks) {
    if (r.status() == worst && &r != first) others.push_back(r.rank());
  }
  if (first == nullptr) return "";
  std::string text = first->message();
  if (text.empty() && worst == v1::CASE_STATUS_WRONG) text = first->diff().first_bad();
  if (text.empty()) text = CaseStatusName(worst);
  std::string message = Attributed(first->rank(), text);
  // Whether a failure is on one rank or all of them points at a link or at the kernel.
  if (!others.empty() && worst != v1::CASE_STATUS_UNSUPPORTED) {
    absl::StrAppend(&message, " (also ", RankList(others), ")");
  }
  return message;
}

}  // namespace

int StatusSeverity(v1::CaseStatus status) {
  switch (status) {
    case v1::CASE_STATUS_OK:
      return 0;
    case v1::CASE_STATUS_UNSUPPORTED:
      return 1;
    case v1::CASE_STATUS_WRONG:
      return 2;
    case v1::CASE_STATUS_HANG:
      return 3;
    default:
      return 4;  // ERROR, and anything a rank should not have sent
  }
}

namespace {

struct HangClaims {
  // suspect -> phase -> the ranks that waited for that suspect in that phase.
  std::map<int32_t, std::map<std::string, std::vector<uint32_t>>> waits;
  std::vector<const v1::RankResult*> silent;  // hung without naming a peer
};

// A rank the pool tore down because another one hung, while it waited for nobody (phase
// "aborted", server/worker_group.cc): a consequence that names no one.
bool IsAbortedHang(const v1::RankResult& r) {
  return r.status() == v1::CASE_STATUS_HANG && r.phase() == "aborted";
}

HangClaims CollectClaims(absl::Span<const v1::RankResult> ranks) {
  HangClaims claims;
  std::vector<const v1::RankResult*> aborted;
  for (const v1::RankResult& r : ranks) {
    if (r.status() != v1::CASE_STATUS_HANG) continue;
    if (r.suspect_peer() >= 0 && static_cast<uint32_t>(r.suspect_peer()) != r.rank()) {
      claims.waits[r.suspect_peer()][r.phase()].push_back(r.rank());
    } else if (IsAbortedHang(r)) {
      aborted.push_back(&r);
    } else {
      claims.silent.push_back(&r);
    }
  }
  // Aborted ranks only speak when nobody else does.
  if (claims.waits.empty() && claims.silent.empty()) claims.silent = std::move(aborted);
  return claims;
}

}  // namespace

bool HangsFollowWrongRanks(absl::Span<const v1::RankResult> ranks) {
  bool any_hang = false;
  for (const v1::RankResult& r : ranks) {
    if (r.status() != v1::CASE_STATUS_HANG) continue;
    any_hang = true;
    const int32_t s = r.suspect_peer();
    if (s < 0 || static_cast<size_t>(s) >= ranks.size()) return false;
    const v1::RankResult* suspect = nullptr;
    for (const v1::RankResult& p : ranks) {
      if (static_cast<int32_t>(p.rank()) == s) suspect = &p;
    }
    if (suspect == nullptr || suspect->status() != v1::CASE_STATUS_WRONG) return false;
  }
  return any_hang;
}

std::optional<uint32_t> HangCulprit(absl::Span<const v1::RankResult> ranks) {
  const HangClaims claims = CollectClaims(ranks);
  if (claims.waits.size() == 1) return static_cast<uint32_t>(claims.waits.begin()->first);
  if (claims.waits.empty() && claims.silent.size() == 1) return claims.silent[0]->rank();
  return std::nullopt;
}

std::string HangVerdict(absl::Span<const v1::RankResult> ranks) {
  const HangClaims claims = CollectClaims(ranks);
  const auto& waits = claims.waits;
  const auto& silent = claims.silent;

  std::vector<std::string> parts;
  std::string verdict;
  if (waits.size() == 1) {
    const auto& [suspect, phases] = *waits.begin();
    for (const auto& [phase, waiters] : phases) {
      parts.push_back(absl::StrCat(RankList(waiters), " waited for it", InPhase(phase)));
    }
    verdict = absl::StrCat("rank ", suspect, " never arrived: ", absl::StrJoin(parts, "; "));
  } else if (waits.size() > 1) {
    // No single culprit: list every claim and let the reader see the cycle or the chain.
    for (const auto& [suspect, phases] : waits) {
      for (const auto& [phase, waiters] : phases) {
        parts.push_back(
            absl::StrCat(RankList(waiters), " waited for rank ", suspect, InPhase(phase)));
      }
    }
    verdict = absl::StrCat("ranks disagree: ", absl::StrJoin(parts, "; "));
  }

  for (const v1::RankResult* r : silent) {
    std::string what = r->message();
    if (what.empty()) what = absl::StrCat("hung", InPhase(r->phase()));
    absl::StrAppend(&verdict, verdict.empty() ? "" : "; ", Attributed(r->rank(), what));
  }
  return verdict;
}

v1::CaseResult MergeCase(uint32_t index, absl::Span<const uint32_t> devices,
                         const wv1::CaseRequest& request, std::vector<v1::RankResult> replies) {
  v1::CaseResult c = Header(index, devices, request);
  std::vector<v1::RankResult> ranks = ByRank(devices, std::move(replies));

  v1::CaseStatus worst = v1::CASE_STATUS_OK;
  for (const v1::RankResult& r : ranks) {
    if (StatusSeverity(r.status()) > StatusSeverity(worst)) worst = r.status();
  }
  // A rank stops a stress run at its first wrong call, and its peers then wait for it in vain:
  // when every rank that hung waited for a rank that answered WRONG, the wrong result is the
  // cause and the hangs its consequence.
  if (worst == v1::CASE_STATUS_HANG && HangsFollowWrongRanks(ranks)) {
    worst = v1::CASE_STATUS_WRONG;
    c.set_status(worst);
    c.set_message(absl::StrCat(WorstRankMessage(ranks, worst), "; then ", HangVerdict(ranks)));
  }
  c.set_status(worst);
  if (c.message().empty() && worst == v1::CASE_STATUS_HANG) {
    c.set_message(HangVerdict(ranks));
  } else if (c.message().empty() && worst != v1::CASE_STATUS_OK) {
    c.set_message(WorstRankMessage(ranks, worst));
  }

  MergeTiming(ranks, *c.mutable_timing());
  MergeDiff(ranks, *c.mutable_diff());

  const double median_s = c.timing().median_us() * 1e-6;
  if (median_s > 0) {
    const double bytes =
        static_cast<double>(request.m()) * request.n() * ElemBytes(request.dtype());
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
  c.set_status(v1::CASE_STATUS_ERROR);
  c.set_message(absl::StrCat("workers could not run the case: ", error.message()));
  c.mutable_diff()->set_first_bad_call(-1);
  return c;
}

}  // namespace colltest::server
