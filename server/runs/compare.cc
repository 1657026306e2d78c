#include "server/runs/compare.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/names.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;

v1::Epilogue EpilogueOf(const v1::CaseResult& c) {
  return c.epilogue() == v1::EPILOGUE_UNSPECIFIED ? v1::EPILOGUE_NONE : c.epilogue();
}

// keep_normed only changes what a quantising epilogue writes.
bool KeepNormedOf(const v1::CaseResult& c) {
  return c.keep_normed() && EpilogueOf(c) != v1::EPILOGUE_NONE;
}

// The FP8 format the case wrote; only the fp8 epilogues have one.
v1::Fp8Format Fp8FormatOf(const v1::CaseResult& c) {
  const v1::Epilogue e = EpilogueOf(c);
  const bool fp8 = e == v1::EPILOGUE_FP8_TOKEN || e == v1::EPILOGUE_FP8_TENSOR;
  return fp8 ? c.fp8_format() : v1::FP8_FORMAT_UNSPECIFIED;
}

// (variant, mode, world_size, m, n, dtype, epilogue, keep_normed, plugin name), unset mode, dtype
// and epilogue as the server runs them. The fp8 format is matched apart (FormatsMatch): a case that
// never ran has none to tell. Two builds of one plugin match: that is the regression check.
using CaseKey = std::tuple<int, int, uint32_t, uint32_t, uint32_t, int, int, bool, std::string>;

CaseKey KeyOf(const v1::CaseResult& c) {
  const v1::Mode mode = c.mode() == v1::MODE_UNSPECIFIED ? v1::MODE_EAGER : c.mode();
  const v1::DType dtype = c.dtype() == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_BF16 : c.dtype();
  return {
      c.variant(),      mode, c.world_size(), c.m(), c.n(), dtype, EpilogueOf(c), KeepNormedOf(c),
      c.plugin().name()};
}

// e4m3fn and e4m3fnuz codes are different numbers, never one case; a case whose format is unknown
// (an ERROR or UNSUPPORTED case: no rank wrote any) matches either.
bool FormatsMatch(v1::Fp8Format a, v1::Fp8Format b) {
  return a == b || a == v1::FP8_FORMAT_UNSPECIFIED || b == v1::FP8_FORMAT_UNSPECIFIED;
}

// How bad a status is for a comparison. HANG ranks above ERROR here: a case that errors out
// at least returns, a hang costs a whole timeout and a group recovery. Unset is read as ERROR,
// so that a server that forgot the status cannot make a case look fixed.
int Severity(v1::CaseStatus status) {
  switch (status) {
    case v1::CASE_STATUS_OK:
    case v1::CASE_STATUS_UNSUPPORTED:
      return 0;
    case v1::CASE_STATUS_WRONG:
      return 1;
    case v1::CASE_STATUS_HANG:
      return 3;
    default:
      return 2;
  }
}

// Only OK and WRONG cases ran their checks to the end; the diff of any other is empty, and
// comparing it would call the first check of a fixed case a growth of its errors.
bool Checked(const v1::CaseResult& c) {
  return c.status() == v1::CASE_STATUS_OK || c.status() == v1::CASE_STATUS_WRONG;
}

bool Timed(const v1::CaseResult& c) { return Checked(c) && c.timing().median_us() > 0; }

// Kinds of regression, the worse the higher: the message names the worst case by kind, then size.
// A missing case ranks lowest: it is most often a narrower sweep, where a slowdown is news.
enum class Badness { kNone = 0, kMissing = 1, kSlower = 2, kDiffGrew = 3, kStatusWorse = 4 };

struct Judged {
  v1::CaseComparison comparison;
  Badness badness = Badness::kNone;
  double size = 0;   // ratio for kSlower, status severity for kStatusWorse
  std::string what;  // the regression in a few words, for the message
};

std::string Us(double us) { return absl::StrFormat("%.2f us", us); }
std::string Percent(double ratio) { return absl::StrFormat("%+.1f %%", (ratio - 1) * 100); }

// "status OK -> WRONG", "mismatches 0 -> 12", ...: every error count of `b` above `a`'s.
std::vector<std::string> ErrorGrowth(const v1::CaseResult& a, const v1::CaseResult& b) {
  std::vector<std::string> grew;
  if (Severity(b.status()) > Severity(a.status())) {
    grew.push_back(absl::StrCat("status ", common::CaseStatusName(a.status()), " -> ",
                                common::CaseStatusName(b.status())));
  }
  if (!Checked(a) || !Checked(b)) return grew;
  const std::pair<const char*, std::pair<uint64_t, uint64_t>> counts[] = {
      {"mismatches", {a.diff().mismatches(), b.diff().mismatches()}},
      {"max ulp", {a.diff().max_ulp(), b.diff().max_ulp()}},
      {"nan/inf", {a.diff().nan_inf(), b.diff().nan_inf()}},
      {"code mismatches", {a.quant().code_mismatches(), b.quant().code_mismatches()}},
      {"scale mismatches", {a.quant().scale_mismatches(), b.quant().scale_mismatches()}},
  };
  for (const auto& [name, values] : counts) {
    if (values.second > values.first) {
      grew.push_back(absl::StrCat(name, " ", values.first, " -> ", values.second));
    }
  }
  return grew;
}

// The timing verdict of two timed cases, with its reason.
std::pair<v1::CompareVerdict, std::string> JudgeTiming(const v1::TimingStats& a,
                                                       const v1::TimingStats& b, double threshold) {
  auto p10 = [](const v1::TimingStats& t) { return t.p10_us() > 0 ? t.p10_us() : t.median_us(); };
  auto p90 = [](const v1::TimingStats& t) { return t.p90_us() > 0 ? t.p90_us() : t.median_us(); };
  const double ratio = b.median_us() / a.median_us();
  const std::string change = absl::StrCat("median ", Us(a.median_us()), " -> ", Us(b.median_us()),
                                          " (", Percent(ratio), ")");
  const bool slower = ratio > 1 + threshold;
  const bool faster = ratio < 1 / (1 + threshold);
  if (!slower && !faster) {
    return {v1::COMPARE_VERDICT_SAME,
            absl::StrFormat("%s, within the %g %% threshold", change, threshold * 100)};
  }
  if (slower && p10(b) > p90(a)) {
    return {v1::COMPARE_VERDICT_REGRESSION,
            absl::StrCat(change, ", p10 ", Us(p10(b)), " > p90 ", Us(p90(a)))};
  }
  if (faster && p90(b) < p10(a)) {
    return {v1::COMPARE_VERDICT_IMPROVEMENT,
            absl::StrCat(change, ", p90 ", Us(p90(b)), " < p10 ", Us(p10(a)))};
  }
  return {v1::COMPARE_VERDICT_SAME, slower ? absl::StrCat(change, ", within the spread: p10 ",
                                                          Us(p10(b)), " <= p90 ", Us(p90(a)))
                                           : absl::StrCat(change, ", within the spread: p90 ",
                                                          Us(p90(b)), " >= p10 ", Us(p10(a)))};
}

void SetIdentity(const v1::CaseResult& c, v1::CaseComparison* out) {
  out->set_variant(c.variant());
  out->set_mode(c.mode() == v1::MODE_UNSPECIFIED ? v1::MODE_EAGER : c.mode());
  out->set_world_size(c.world_size());
  out->set_m(c.m());
  out->set_n(c.n());
  out->set_dtype(c.dtype() == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_BF16 : c.dtype());
  out->set_epilogue(EpilogueOf(c));
  out->set_keep_normed(KeepNormedOf(c));
  out->set_fp8_format(Fp8FormatOf(c));
  out->set_plugin(c.plugin().name());
}

std::string StatusChange(const v1::CaseResult& a, const v1::CaseResult& b) {
  if (a.status() == b.status())
    return absl::StrCat(common::CaseStatusName(a.status()), " in both runs");
  return absl::StrCat("status ", common::CaseStatusName(a.status()), " -> ",
                      common::CaseStatusName(b.status()));
}

// `auto` is matched as `auto`; when it dispatched differently, that likely explains the change.
// Two builds of one kernel plugin: which ones, so that a regression names the build that brought
// it.
std::string PluginNote(const v1::CaseResult& a, const v1::CaseResult& b) {
  if (a.variant() != v1::VARIANT_PLUGIN || a.plugin().sha256() == b.plugin().sha256()) return "";
  auto build = [](const v1::PluginIdentity& p) {
    return absl::StrCat(p.version(), " (sha256 ", p.sha256().substr(0, 12), ")");
  };
  return absl::StrCat("; ", common::KernelName(b), " ", build(a.plugin()), " -> ",
                      build(b.plugin()));
}

std::string DispatchNote(const v1::CaseResult& a, const v1::CaseResult& b) {
  if (a.variant() != v1::VARIANT_AUTO ||
      (a.resolved_variant() == b.resolved_variant() && a.plugin().name() == b.plugin().name())) {
    return "";
  }
  return absl::StrCat("; auto dispatched to ",
                      common::KernelName(b.resolved_variant(), b.plugin().name()), " (was ",
                      common::KernelName(a.resolved_variant(), a.plugin().name()), ")");
}

Judged JudgeMatched(const v1::CaseResult& a, const v1::CaseResult& b, double threshold) {
  Judged j;
  v1::CaseComparison& out = j.comparison;
  SetIdentity(a, &out);
  // The format the one that ran wrote, when only one did.
  if (out.fp8_format() == v1::FP8_FORMAT_UNSPECIFIED) out.set_fp8_format(Fp8FormatOf(b));
  *out.mutable_timing_a() = a.timing();
  *out.mutable_timing_b() = b.timing();
  out.set_status_a(a.status());
  out.set_status_b(b.status());
  *out.mutable_diff_a() = a.diff();
  *out.mutable_diff_b() = b.diff();
  *out.mutable_quant_a() = a.quant();
  *out.mutable_quant_b() = b.quant();
  const bool timed = Timed(a) && Timed(b);
  if (timed) out.set_ratio(b.timing().median_us() / a.timing().median_us());

  const std::vector<std::string> grew = ErrorGrowth(a, b);
  const bool status_worse = Severity(b.status()) > Severity(a.status());
  const bool status_better = Severity(b.status()) < Severity(a.status());
  std::pair<v1::CompareVerdict, std::string> timing = {v1::COMPARE_VERDICT_SAME, ""};
  if (timed) timing = JudgeTiming(a.timing(), b.timing(), threshold);
  const std::string prefix = a.status() == b.status() ? "" : StatusChange(a, b) + ", ";
  if (!grew.empty()) {
    out.set_verdict(v1::COMPARE_VERDICT_REGRESSION);
    out.set_reason(absl::StrJoin(grew, ", "));
    j.badness = status_worse ? Badness::kStatusWorse : Badness::kDiffGrew;
    j.size = Severity(b.status());
    j.what = grew.front();
  } else if (timing.first == v1::COMPARE_VERDICT_REGRESSION) {
    out.set_verdict(v1::COMPARE_VERDICT_REGRESSION);
    out.set_reason(prefix + timing.second);
    j.badness = Badness::kSlower;
    j.size = out.ratio();
    j.what = Percent(out.ratio());
  } else if (status_better) {
    out.set_verdict(v1::COMPARE_VERDICT_IMPROVEMENT);
    out.set_reason(timed ? prefix + timing.second : StatusChange(a, b));
  } else if (timed) {
    out.set_verdict(timing.first);
    out.set_reason(prefix + timing.second);
  } else {
    out.set_verdict(v1::COMPARE_VERDICT_SAME);
    out.set_reason(absl::StrCat(StatusChange(a, b), ", no timing to compare"));
  }
  out.set_reason(out.reason() + DispatchNote(a, b) + PluginNote(a, b));
  *out.mutable_plugin_a() = a.plugin();
  *out.mutable_plugin_b() = b.plugin();
  return j;
}

Judged OnlyIn(const v1::CaseResult& c, bool in_a) {
  Judged j;
  v1::CaseComparison& out = j.comparison;
  SetIdentity(c, &out);
  if (in_a) {
    out.set_verdict(v1::COMPARE_VERDICT_ONLY_A);
    out.set_reason("missing from run b");
    *out.mutable_timing_a() = c.timing();
    out.set_status_a(c.status());
    *out.mutable_diff_a() = c.diff();
    *out.mutable_quant_a() = c.quant();
    j.badness = Badness::kMissing;
    j.what = "missing from run b";
  } else {
    out.set_verdict(v1::COMPARE_VERDICT_ONLY_B);
    out.set_reason("new in run b");
    *out.mutable_timing_b() = c.timing();
    out.set_status_b(c.status());
    *out.mutable_diff_b() = c.diff();
    *out.mutable_quant_b() = c.quant();
  }
  return j;
}

// Takes the case of `b` that `ca` matches out of `candidates` (the unmatched cases of `b` with its
// key, in order): the first with the same fp8 format, else the first whose format either does not
// know. -1 when none.
int TakeMatch(const v1::CaseResult& ca, const v1::RunResult& b, std::deque<int>& candidates) {
  const v1::Fp8Format format = Fp8FormatOf(ca);
  auto match = std::find_if(candidates.begin(), candidates.end(),
                            [&](int i) { return Fp8FormatOf(b.cases(i)) == format; });
  if (match == candidates.end()) {
    match = std::find_if(candidates.begin(), candidates.end(),
                         [&](int i) { return FormatsMatch(Fp8FormatOf(b.cases(i)), format); });
  }
  if (match == candidates.end()) return -1;
  const int ib = *match;
  candidates.erase(match);
  return ib;
}

// Every case of `a` in order, matched with the next unmatched case of `b` with its key, then the
// cases of `b` left over.
std::vector<Judged> JudgeAll(const v1::RunResult& a, const v1::RunResult& b, double threshold) {
  std::map<CaseKey, std::deque<int>> unmatched;
  for (int i = 0; i < b.cases_size(); ++i) unmatched[KeyOf(b.cases(i))].push_back(i);
  std::vector<bool> used(b.cases_size(), false);
  std::vector<Judged> judged;
  for (const v1::CaseResult& ca : a.cases()) {
    const int ib = TakeMatch(ca, b, unmatched[KeyOf(ca)]);
    if (ib < 0) {
      judged.push_back(OnlyIn(ca, /*in_a=*/true));
      continue;
    }
    used[ib] = true;
    judged.push_back(JudgeMatched(ca, b.cases(ib), threshold));
  }
  for (int i = 0; i < b.cases_size(); ++i) {
    if (!used[i]) judged.push_back(OnlyIn(b.cases(i), /*in_a=*/false));
  }
  return judged;
}

// "lamport graph w=4 m=64 n=7168 bf16", then the epilogue when there is one: "... bf16 fp8_token
// e4m3fn keep_normed".
std::string CaseLabel(const v1::CaseComparison& c) {
  std::string label =
      absl::StrCat(common::KernelName(c), " ", common::ModeName(c.mode()), " w=", c.world_size(),
                   " m=", c.m(), " n=", c.n(), " ", common::DTypeName(c.dtype()));
  if (c.epilogue() == v1::EPILOGUE_NONE || c.epilogue() == v1::EPILOGUE_UNSPECIFIED) return label;
  absl::StrAppend(&label, " ", common::EpilogueName(c.epilogue()));
  if (c.fp8_format() != v1::FP8_FORMAT_UNSPECIFIED) {
    absl::StrAppend(&label, " ", common::Fp8FormatName(c.fp8_format()));
  }
  if (c.keep_normed()) absl::StrAppend(&label, " keep_normed");
  return label;
}

std::string Summary(const std::vector<Judged>& judged, const v1::CompareResponse& response) {
  const size_t total = judged.size();
  const char* noun = total == 1 ? "case" : "cases";
  if (response.regressions() > 0) {
    const Judged* worst = nullptr;
    for (const Judged& j : judged) {
      if (j.badness == Badness::kNone) continue;
      if (worst == nullptr || std::tie(j.badness, j.size) > std::tie(worst->badness, worst->size)) {
        worst = &j;
      }
    }
    return absl::StrCat(response.regressions(), " of ", total, " ", noun,
                        " regressed (worst: ", CaseLabel(worst->comparison), " ", worst->what, ")");
  }
  int only_b = 0;
  for (const Judged& j : judged) {
    if (j.comparison.verdict() == v1::COMPARE_VERDICT_ONLY_B) ++only_b;
  }
  std::vector<std::string> notes;
  if (response.improvements() > 0)
    notes.push_back(absl::StrCat(response.improvements(), " improved"));
  if (only_b > 0) notes.push_back(absl::StrCat(only_b, " only in run b"));
  std::string message = absl::StrCat("no regression in ", total, " ", noun);
  if (!notes.empty()) absl::StrAppend(&message, " (", absl::StrJoin(notes, ", "), ")");
  return message;
}

// "ran on separate GPUs", "shared GPUs (4 ranks per GPU)", "shared time-sliced GPUs (...)".
std::string Placement(const v1::RunResult& run) {
  if (run.time_sliced()) {
    return absl::StrCat("shared time-sliced GPUs (", EffectiveRanksPerGpu(run), " ranks per GPU)");
  }
  if (EffectiveRanksPerGpu(run) <= 1) return "ran on separate GPUs";
  return absl::StrCat("shared GPUs (", EffectiveRanksPerGpu(run), " ranks per GPU)");
}

}  // namespace

uint32_t EffectiveRanksPerGpu(const v1::RunResult& run) {
  return run.ranks_per_gpu() == 0 ? 1 : run.ranks_per_gpu();
}

absl::Status CheckPlacedAlike(const v1::RunResult& first, absl::string_view first_name,
                              const v1::RunResult& second, absl::string_view second_name) {
  if (EffectiveRanksPerGpu(first) == EffectiveRanksPerGpu(second) &&
      first.time_sliced() == second.time_sliced()) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat(first_name, " ", Placement(first), " and ", second_name, " ", Placement(second),
                   ": their timings measure different things; compare runs placed alike"));
}

v1::CompareResponse CompareRuns(const v1::RunResult& a, const v1::RunResult& b, double threshold) {
  if (!(threshold > 0) || !std::isfinite(threshold)) threshold = kDefaultCompareThreshold;
  v1::CompareResponse response;
  response.set_run_a(a.run_id());
  response.set_run_b(b.run_id());
  response.set_threshold(threshold);
  *response.mutable_machine_a() = a.machine();
  *response.mutable_machine_b() = b.machine();
  const std::vector<Judged> judged = JudgeAll(a, b, threshold);
  for (const Judged& j : judged) {
    *response.add_cases() = j.comparison;
    if (j.badness != Badness::kNone) response.set_regressions(response.regressions() + 1);
    if (j.comparison.verdict() == v1::COMPARE_VERDICT_IMPROVEMENT) {
      response.set_improvements(response.improvements() + 1);
    }
  }
  response.set_regressed(response.regressions() > 0);
  response.set_message(Summary(judged, response));
  return response;
}

}  // namespace colltest::server
