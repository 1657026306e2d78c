// Every rule here is one of docs/verdicts.md; server/workers/verdict.h says what comes in.
#include "server/workers/verdict.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/names.h"
#include "common/worker_page.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;

// The message prefix of a rank torn down because another one failed: a consequence, never the
// culprit, wherever a message is chosen among ranks.
constexpr absl::string_view kAborted = "aborted:";

bool IsAbortedByAnother(const v1::RankResult& r) { return absl::StartsWith(r.message(), kAborted); }

// "rank 2" or "ranks 0, 2, 3".
std::string RankList(const std::vector<uint32_t>& ranks) {
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ", absl::StrJoin(ranks, ", "));
}

// "rank 2: <text>", unless the text already starts by naming that rank (a watchdog verdict reads
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

// ---- The watchdog's verdict on a rank that did not answer ----

// Set by RankVerdicts for every unanswered rank: the facts of the case and of the rank.
struct Unanswered {
  const CaseFacts& c;
  size_t rank;
  const RankFacts& f;
};

std::string PidOf(const Unanswered& u) {
  return absl::StrCat("rank ", u.rank, " (pid ", u.f.pid, ")");
}

// A rank stopped while it waited for a peer: a HANG naming that peer, whatever ended the wait.
void WaitingHang(const Unanswered& u, const std::string& how, v1::RankResult& result) {
  result.set_status(v1::CASE_STATUS_HANG);
  result.set_suspect_peer(u.f.awaited_at_stop);
  result.set_phase(how);
  result.set_message(
      absl::StrCat("rank ", u.rank, " waited for rank ", u.f.awaited_at_stop, " in ", how));
}

void HangOfItsOwn(const std::string& message, v1::RankResult& result) {
  result.set_status(v1::CASE_STATUS_HANG);
  result.set_message(message);
  result.set_phase("watchdog");
}

// Stopped by the host deadline: its progress rule (no rank still out completed work for the
// window) or its wall cap (server/workers/case_deadline.h).
void LateVerdict(const Unanswered& u, v1::RankResult& result) {
  const bool still = u.c.no_progress_for > absl::ZeroDuration();
  const std::string still_for =
      absl::StrCat("no progress for ",
                   absl::FormatDuration(absl::Trunc(u.c.no_progress_for, absl::Milliseconds(100))));
  const std::string cap = absl::FormatDuration(u.c.deadline);
  if (u.f.awaited_at_stop >= 0) {
    WaitingHang(u,
                absl::StrCat("a wait ended by the host deadline (", still ? still_for : cap, ")"),
                result);
    return;
  }
  result.set_status(v1::CASE_STATUS_HANG);
  result.set_message(still ? absl::StrCat("rank ", u.rank, " did not answer: ", still_for)
                           : absl::StrCat("rank ", u.rank, " did not answer within ", cap));
  result.set_phase("host deadline");
}

// Torn down with its group: because the case was cancelled, or because another rank failed.
void KilledByUsVerdict(const Unanswered& u, v1::RankResult& result) {
  if (u.c.cancel_killed) {
    result.set_status(v1::CASE_STATUS_ERROR);
    result.set_message("cancelled: killed after it did not stop within 1s");
    return;
  }
  const std::optional<size_t> culprit = u.c.first_failed;
  if (u.f.awaited_at_stop >= 0) {
    WaitingHang(u,
                culprit.has_value() ? absl::StrCat("a wait ended when rank ", *culprit, " failed")
                                    : std::string("a wait ended when the group was stopped"),
                result);
    return;
  }
  // Torn down because a peer died: that death is the cause, and an ERROR; because a peer hung: a
  // consequence of that hang, not an error of this rank.
  const bool culprit_died = culprit.has_value() && *culprit < u.c.ranks.size() &&
                            !u.c.ranks[*culprit].answer.has_value() &&
                            u.c.ranks[*culprit].failure == CallFailure::kDied;
  result.set_status(culprit_died ? v1::CASE_STATUS_ERROR : v1::CASE_STATUS_HANG);
  result.set_message(culprit.has_value() ? absl::StrCat(kAborted, " group torn down after rank ",
                                                        *culprit, " failed")
                                         : absl::StrCat(kAborted, " group torn down"));
  result.set_phase(culprit_died ? "" : "aborted");
}

// A rank that died in, or never came back from, a kernel plugin's entry point (its page said
// which): the plugin and the call are named, since the kernel is not colltest's
// (docs/plugins.md).
void InPluginVerdict(const Unanswered& u, v1::RankResult& result) {
  if (u.c.plugin.empty() || u.c.cancel_killed || u.f.failure == CallFailure::kError) return;
  if (u.f.plugin_entry == 0) {
    if (u.f.failure == CallFailure::kDied) return;  // died outside it: the plain message
    // Stopped outside the plugin while its peers were inside (a stall_rank fault, a wedged
    // host): likely the rank their kernels waited for, since the plugin says nothing.
    result.set_status(v1::CASE_STATUS_HANG);
    result.set_suspect_peer(-1);
    result.set_phase(absl::StrCat("outside ", u.c.plugin));
    result.set_message(absl::StrCat(PidOf(u), " was outside ", u.c.plugin,
                                    " (between calls or checking) when the group was stopped"));
    return;
  }
  const std::string where = absl::StrCat(u.c.plugin, " ", PluginEntryName(u.f.plugin_entry));
  // A launch is one call; a GPU rank waiting for its stream waits for every call enqueued since
  // it last drained, the earliest of which the page names.
  std::string call;
  if (u.f.plugin_entry == static_cast<uint32_t>(PluginEntry::kLaunch)) {
    call = absl::StrCat(" (call ", u.f.plugin_call, ")");
  } else if (u.f.plugin_entry == static_cast<uint32_t>(PluginEntry::kKernel)) {
    call = absl::StrCat(" (calls from ", u.f.plugin_call, ")");
  }
  switch (u.f.failure) {
    case CallFailure::kDied:
      result.set_message(absl::StrCat(PidOf(u), " died in ", where, call, ": ", u.f.exit));
      result.set_phase(where);
      return;
    case CallFailure::kLate:
    case CallFailure::kStalled:
    case CallFailure::kAbandoned:
    case CallFailure::kKilledByUs:  // stopped with its group while still inside the plugin
      result.set_status(v1::CASE_STATUS_HANG);
      result.set_suspect_peer(-1);
      result.set_message(
          absl::StrCat(where, call, " did not finish on rank ", u.rank, ": ", result.message()));
      result.set_phase(where);
      return;
    default:
      return;
  }
}

v1::RankResult UnansweredVerdict(const Unanswered& u) {
  v1::RankResult result;
  result.set_suspect_peer(-1);
  switch (u.f.failure) {
    case CallFailure::kDied:
      result.set_status(v1::CASE_STATUS_ERROR);
      result.set_message(absl::StrCat(PidOf(u), " died: ", u.f.exit));
      break;
    case CallFailure::kAbandoned:
      HangOfItsOwn(absl::StrCat(PidOf(u),
                                " had not answered when every peer had timed out waiting for it: "
                                "killed"),
                   result);
      break;
    case CallFailure::kStalled:
      HangOfItsOwn(
          absl::StrCat(PidOf(u), " made no progress for ",
                       absl::FormatDuration(absl::Trunc(u.f.stalled_for, absl::Milliseconds(100))),
                       " (no heartbeat), alive but stuck: killed"),
          result);
      break;
    case CallFailure::kLate:
      LateVerdict(u, result);
      break;
    case CallFailure::kError:
      result.set_status(v1::CASE_STATUS_ERROR);
      result.set_message(
          absl::StrCat("rank ", u.rank, " RunCase failed (infrastructure): ",
                       absl::StatusCodeToString(static_cast<absl::StatusCode>(u.f.error_code)),
                       ": ", u.f.error_message));
      break;
    case CallFailure::kKilledByUs:
      KilledByUsVerdict(u, result);
      break;
  }
  InPluginVerdict(u, result);
  return result;
}

// ---- Hang claims ----

struct HangClaims {
  // suspect -> phase -> the ranks that waited for that suspect in that phase.
  std::map<int32_t, std::map<std::string, std::vector<uint32_t>>> waits;
  std::vector<const v1::RankResult*> silent;  // hung without naming a peer
};

// A rank torn down because another one hung, while it waited for nobody (phase "aborted", set by
// KilledByUsVerdict): a consequence that names no one.
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

// A WRONG rank's text (its first bad quantised row when it sent none) with the quantisation rule
// its codes or scales break, when they are what failed: the rule says where to look (a scale, the
// other fp8 format, saturation, rounding) before anyone reads a code. Left as it is when the text
// already names the rule.
std::string WithQuantRule(const v1::RankResult& r, std::string text) {
  const v1::QuantDiffStats& q = r.quant();
  const bool quant_failed = q.code_mismatches() > 0 || q.scale_mismatches() > 0;
  if (!quant_failed || q.rule() == v1::QUANT_RULE_UNSPECIFIED) return text;
  if (text.empty()) text = q.first_bad();
  const absl::string_view rule = common::QuantRuleName(q.rule());
  // The worker's own wording ("breaks the rounding rule"), or this one.
  const std::string named = absl::StrCat("(quant rule: ", rule, ")");
  if (absl::StrContains(text, absl::StrCat(rule, " rule")) || absl::StrContains(text, named)) {
    return text;
  }
  return absl::StrCat(text, text.empty() ? "" : " ", named);
}

// The message of the lowest rank with the worst status (preferring the rank that failed over
// those aborted because of it), and which other ranks share the status.
std::string WorstRankMessage(absl::Span<const v1::RankResult> ranks, v1::CaseStatus worst) {
  const v1::RankResult* first = nullptr;
  for (const v1::RankResult& r : ranks) {
    if (r.status() != worst) continue;
    if (first == nullptr || (IsAbortedByAnother(*first) && !IsAbortedByAnother(r))) first = &r;
  }
  if (first == nullptr) return "";
  std::vector<uint32_t> others;
  for (const v1::RankResult& r : ranks) {
    if (r.status() == worst && &r != first) others.push_back(r.rank());
  }
  std::string text = first->message();
  if (worst == v1::CASE_STATUS_WRONG) text = WithQuantRule(*first, std::move(text));
  if (text.empty() && worst == v1::CASE_STATUS_WRONG) text = first->diff().first_bad();
  if (text.empty()) text = std::string(common::CaseStatusName(worst));
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

bool IsFailure(v1::CaseStatus status) {
  return status != v1::CASE_STATUS_OK && status != v1::CASE_STATUS_UNSUPPORTED;
}

std::vector<v1::RankResult> RankVerdicts(const CaseFacts& facts) {
  std::vector<v1::RankResult> results(facts.ranks.size());
  for (size_t rank = 0; rank < facts.ranks.size(); ++rank) {
    const RankFacts& f = facts.ranks[rank];
    results[rank] = f.answer.has_value() ? *f.answer : UnansweredVerdict({facts, rank, f});
    results[rank].set_rank(static_cast<uint32_t>(rank));
    results[rank].set_device(f.device);
  }
  return results;
}

v1::RankResult NoResultFrom(uint32_t rank, uint32_t device) {
  v1::RankResult r;
  r.set_rank(rank);
  r.set_device(device);
  r.set_status(v1::CASE_STATUS_ERROR);
  r.set_message("no result from this rank");
  r.set_suspect_peer(-1);
  return r;
}

void RequireStatus(v1::RankResult& r) {
  if (r.status() != v1::CASE_STATUS_UNSPECIFIED && v1::CaseStatus_IsValid(r.status())) return;
  r.set_status(v1::CASE_STATUS_ERROR);
  if (r.message().empty()) r.set_message("the worker returned no status");
}

CaseDecision CaseVerdict(absl::Span<const v1::RankResult> ranks) {
  CaseDecision v;
  for (const v1::RankResult& r : ranks) {
    if (StatusSeverity(r.status()) > StatusSeverity(v.status)) v.status = r.status();
  }
  if (v.status == v1::CASE_STATUS_OK) return v;
  if (v.status != v1::CASE_STATUS_HANG) {
    v.message = WorstRankMessage(ranks, v.status);
  } else if (HangsFollowWrongRanks(ranks)) {
    // A rank stops a stress run at its first wrong call, and its peers then wait for it in vain:
    // the wrong result is the cause and the hangs its consequence.
    v.status = v1::CASE_STATUS_WRONG;
    v.message = absl::StrCat(WorstRankMessage(ranks, v.status), "; then ", HangVerdict(ranks));
  } else {
    v.message = HangVerdict(ranks);
  }
  return v;
}

CaseDecision PoolFailureVerdict(const absl::Status& error) {
  return {v1::CASE_STATUS_ERROR, absl::StrCat("workers could not run the case: ", error.message())};
}

std::string CancelledCaseReason(const CaseFacts& facts) {
  return facts.killed ? "a cancelled case did not stop within 1 s: killed"
                      : "a cancelled case stopped mid-protocol";
}

std::string GroupFailureSummary(absl::Span<const v1::RankResult> ranks) {
  const v1::RankResult* first = nullptr;
  for (const v1::RankResult& r : ranks) {
    if (!IsFailure(r.status())) continue;
    if (first == nullptr || (IsAbortedByAnother(*first) && !IsAbortedByAnother(r))) first = &r;
  }
  if (first == nullptr) return "";
  return absl::StrCat("rank ", first->rank(), ": ", first->message());
}

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

std::optional<Culprit> HangCulpritOf(const v1::CaseResult& result,
                                     absl::Span<const uint32_t> devices) {
  if (result.status() != v1::CASE_STATUS_HANG) return std::nullopt;
  const std::vector<v1::RankResult> ranks(result.ranks().begin(), result.ranks().end());
  const std::optional<uint32_t> rank = HangCulprit(ranks);
  if (!rank.has_value() || *rank >= devices.size()) return std::nullopt;
  return Culprit{*rank, devices[*rank]};
}

std::string HangVerdict(absl::Span<const v1::RankResult> ranks) {
  const HangClaims claims = CollectClaims(ranks);
  std::vector<std::string> parts;
  std::string verdict;
  if (claims.waits.size() == 1) {
    const auto& [suspect, phases] = *claims.waits.begin();
    for (const auto& [phase, waiters] : phases) {
      parts.push_back(absl::StrCat(RankList(waiters), " waited for it", InPhase(phase)));
    }
    verdict = absl::StrCat("rank ", suspect, " never arrived: ", absl::StrJoin(parts, "; "));
  } else if (claims.waits.size() > 1) {
    // No single culprit: list every claim and let the reader see the cycle or the chain.
    for (const auto& [suspect, phases] : claims.waits) {
      for (const auto& [phase, waiters] : phases) {
        parts.push_back(
            absl::StrCat(RankList(waiters), " waited for rank ", suspect, InPhase(phase)));
      }
    }
    verdict = absl::StrCat("ranks disagree: ", absl::StrJoin(parts, "; "));
  }
  // Ranks that never came back from one kernel plugin entry point: one line naming them all.
  std::map<std::string, std::vector<const v1::RankResult*>> in_plugin;
  std::vector<const v1::RankResult*> silent;
  for (const v1::RankResult* r : claims.silent) {
    (absl::StartsWith(r->phase(), "plugin:") ? in_plugin[r->phase()] : silent).push_back(r);
  }
  for (const auto& [phase, hung] : in_plugin) {
    // The rank whose own deadline or watchdog stopped it speaks; those torn down with it follow.
    const v1::RankResult* first = hung.front();
    for (const v1::RankResult* r : hung) {
      if (absl::StrContains(first->message(), kAborted) &&
          !absl::StrContains(r->message(), kAborted)) {
        first = r;
      }
    }
    std::vector<uint32_t> others;
    for (const v1::RankResult* r : hung) {
      if (r != first) others.push_back(r->rank());
    }
    absl::StrAppend(&verdict, verdict.empty() ? "" : "; ", first->message(),
                    others.empty() ? "" : absl::StrCat(" (also ", RankList(others), ")"));
  }
  for (const v1::RankResult* r : silent) {
    std::string what = r->message();
    if (what.empty()) what = absl::StrCat("hung", InPhase(r->phase()));
    absl::StrAppend(&verdict, verdict.empty() ? "" : "; ", Attributed(r->rank(), what));
  }
  return verdict;
}

}  // namespace colltest::server
