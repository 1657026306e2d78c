#include "client/fleet/fleet_verdict.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/commands/command_support.h"
#include "client/commands/exit_code.h"
#include "client/format/result_view.h"
#include "common/names.h"

namespace colltest::client {
namespace {

// Enough names for a person to start with; the JSON report lists every node anyway.
constexpr size_t kMaxNamedUnreachable = 20;

bool IsFailing(v1::CaseStatus status) {
  return status != v1::CASE_STATUS_OK && status != v1::CASE_STATUS_UNSUPPORTED;
}

bool IsSlow(const v1::HealthTarget& t) { return t.slow() || t.below_expected(); }

std::vector<const v1::HealthTarget*> Targets(const v1::HealthResponse& health) {
  std::vector<const v1::HealthTarget*> all;
  for (const v1::HealthTarget& t : health.ranks()) all.push_back(&t);
  for (const v1::HealthTarget& t : health.pairs()) all.push_back(&t);
  return all;
}

// The device most hung targets waited for (the lowest index on a tie), or -1.
int32_t MostSuspected(const v1::HealthResponse& health) {
  std::map<int32_t, int> votes;
  for (const v1::HealthTarget* t : Targets(health)) {
    if (const int32_t s = SuspectDevice(*t); s >= 0) ++votes[s];
  }
  int32_t best = -1;
  int best_votes = 0;
  for (const auto& [device, count] : votes) {
    if (count > best_votes) {
      best = device;
      best_votes = count;
    }
  }
  return best;
}

// The failure rules of FindCulprit, in the order of how much each one isolates.
std::vector<uint32_t> FailureCulprit(const v1::HealthResponse& health) {
  if (const int32_t suspect = MostSuspected(health); suspect >= 0) {
    return {static_cast<uint32_t>(suspect)};
  }
  std::vector<const v1::HealthTarget*> pairs;
  for (const v1::HealthTarget& p : health.pairs()) {
    if (IsFailing(p.status())) pairs.push_back(&p);
  }
  // Every pair holding a bad device fails; the device in all of them is the one to replace.
  if (pairs.size() >= 2) {
    std::vector<uint32_t> common(pairs[0]->devices().begin(), pairs[0]->devices().end());
    for (const v1::HealthTarget* p : pairs) {
      common.erase(std::remove_if(common.begin(), common.end(),
                                  [p](uint32_t d) {
                                    return std::find(p->devices().begin(), p->devices().end(), d) ==
                                           p->devices().end();
                                  }),
                   common.end());
    }
    if (common.size() == 1) return common;
  }
  std::vector<uint32_t> ranks;
  for (const v1::HealthTarget& r : health.ranks()) {
    if (IsFailing(r.status()) && r.devices_size() == 1) ranks.push_back(r.devices(0));
  }
  if (ranks.size() == 1) return ranks;
  // One failing pair, or pairs without a common device: a link, both of its ends.
  if (!pairs.empty()) return {pairs[0]->devices().begin(), pairs[0]->devices().end()};
  return {};
}

std::vector<uint32_t> CulpritIndices(const v1::HealthResponse& health) {
  if (CarriedVerdictCode(health) != kExitOk) return FailureCulprit(health);
  for (const v1::HealthTarget* t : Targets(health)) {
    if (IsSlow(*t)) return {t->devices().begin(), t->devices().end()};
  }
  return {};
}

NodeVerdict VerdictOfAnswer(const v1::HealthResponse& health) {
  switch (CarriedVerdictCode(health)) {
    case kExitOk:
      break;
    case kExitWrong:
      return NodeVerdict::kWrong;
    case kExitHang:
      return NodeVerdict::kHang;
    default:
      return NodeVerdict::kError;
  }
  for (const v1::HealthTarget* t : Targets(health)) {
    if (IsSlow(*t)) return NodeVerdict::kWarn;
  }
  return NodeVerdict::kOk;
}

}  // namespace

absl::string_view NodeVerdictName(NodeVerdict verdict) {
  switch (verdict) {
    case NodeVerdict::kOk:
      return "OK";
    case NodeVerdict::kWarn:
      return "WARN";
    case NodeVerdict::kWrong:
      return "WRONG";
    case NodeVerdict::kHang:
      return "HANG";
    case NodeVerdict::kError:
      return "ERROR";
    case NodeVerdict::kBusy:
      return "BUSY";
    case NodeVerdict::kUnreachable:
      return "UNREACHABLE";
    case NodeVerdict::kUnauthenticated:
      return "UNAUTHENTICATED";
  }
  return "ERROR";
}

int CarriedVerdictCode(const v1::HealthResponse& health) {
  if (!health.busy()) return ExitCodeForHealth(health);
  v1::HealthResponse verdict = health;
  verdict.set_busy(false);
  return ExitCodeForHealth(verdict);
}

std::vector<CulpritDevice> FindCulprit(const v1::HealthResponse& health) {
  std::vector<CulpritDevice> culprit;
  for (uint32_t index : CulpritIndices(health)) {
    CulpritDevice device{index, ""};
    for (const v1::Device& d : health.machine().devices()) {
      if (d.index() == index) device.uuid = d.uuid();
    }
    culprit.push_back(std::move(device));
  }
  return culprit;
}

std::string CulpritText(const std::vector<CulpritDevice>& culprit) {
  if (culprit.empty()) return "";
  std::vector<std::string> parts;
  for (const CulpritDevice& d : culprit) {
    parts.push_back(d.uuid.empty() ? absl::StrCat(d.index)
                                   : absl::StrCat(d.index, " (", d.uuid, ")"));
  }
  return absl::StrCat(culprit.size() == 1 ? "device " : "devices ", absl::StrJoin(parts, ", "));
}

std::string VerdictAge(const v1::HealthResponse& health, absl::Time now) {
  if (health.verdict_unix_ms() <= 0) return "";
  const absl::Duration age =
      std::max(absl::ZeroDuration(), now - absl::FromUnixMillis(health.verdict_unix_ms()));
  if (age < absl::Seconds(1)) return "0s";
  return absl::FormatDuration(absl::Trunc(age, absl::Seconds(1)));
}

void ApplyHealthAnswer(const v1::HealthResponse& health, absl::Time now, NodeReport* report) {
  report->hostname = health.machine().hostname();
  const bool has_verdict = health.status() != v1::CASE_STATUS_UNSPECIFIED;
  const std::string age = VerdictAge(health, now);
  if (health.busy()) {
    report->verdict = NodeVerdict::kBusy;
    report->message = absl::StrCat("busy: ", health.busy_reason());
    if (has_verdict) {
      absl::StrAppend(&report->message, "; last verdict ", common::CaseStatusName(health.status()),
                      age.empty() ? "" : absl::StrCat(", ", age, " ago"), ": ", health.message());
    }
    return;
  }
  if (!has_verdict) {
    report->verdict = NodeVerdict::kUnreachable;
    report->message = "answered without a verdict: not a colltestd health answer";
    return;
  }
  report->verdict = VerdictOfAnswer(health);
  report->culprit = FindCulprit(health);
  report->message = health.message();
  if (health.cached()) {
    report->message = absl::StrCat("cached", age.empty() ? "" : absl::StrCat(", ", age, " old"),
                                   ": ", report->message);
  }
}

bool ApplyCallFailure(const absl::Status& status, bool connected, absl::Duration deadline,
                      NodeReport* report) {
  const std::string code(absl::StatusCodeToString(status.code()));
  const std::string within = absl::FormatDuration(deadline);
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
      report->verdict = NodeVerdict::kUnreachable;
      report->message = absl::StrCat(code, ": ", status.message());
      return true;
    case absl::StatusCode::kDeadlineExceeded:
      if (!connected) {
        report->verdict = NodeVerdict::kUnreachable;
        report->message = absl::StrCat("no connection within ", within, " (--node-timeout)");
        return true;
      }
      report->verdict = NodeVerdict::kError;
      report->message = absl::StrCat("no health verdict within ", within,
                                     " (--node-timeout): the node may be busy or stuck");
      return false;
    case absl::StatusCode::kUnauthenticated:
      report->verdict = NodeVerdict::kUnauthenticated;
      report->message = absl::StrCat(code, ": ", status.message());
      return false;
    case absl::StatusCode::kFailedPrecondition:
      report->verdict = IsBusyRefusal(status) ? NodeVerdict::kBusy : NodeVerdict::kError;
      report->message = absl::StrCat(code, ": ", status.message());
      return false;
    case absl::StatusCode::kUnimplemented:
      report->verdict = NodeVerdict::kUnreachable;
      report->message = absl::StrCat("not a colltestd (", code, ": ", status.message(), ")");
      return false;
    default:
      report->verdict = NodeVerdict::kError;
      report->message = absl::StrCat(code, ": ", status.message());
      return false;
  }
}

FleetCounts CountVerdicts(const std::vector<NodeReport>& nodes) {
  FleetCounts c;
  c.nodes = static_cast<int>(nodes.size());
  for (const NodeReport& n : nodes) {
    switch (n.verdict) {
      case NodeVerdict::kOk:
        ++c.ok;
        break;
      case NodeVerdict::kWarn:
        ++c.warn;
        break;
      case NodeVerdict::kWrong:
        ++c.wrong;
        break;
      case NodeVerdict::kHang:
        ++c.hang;
        break;
      case NodeVerdict::kError:
        ++c.error;
        break;
      case NodeVerdict::kBusy:
        ++c.busy;
        break;
      case NodeVerdict::kUnreachable:
        ++c.unreachable;
        break;
      case NodeVerdict::kUnauthenticated:
        ++c.unauthenticated;
        break;
    }
  }
  return c;
}

int FleetExitCode(const std::vector<NodeReport>& nodes) {
  const FleetCounts c = CountVerdicts(nodes);
  if (c.error > 0 || c.unauthenticated > 0) return kExitError;
  if (c.hang > 0) return kExitHang;
  if (c.wrong > 0) return kExitWrong;
  if (c.busy > 0) return kExitBusy;
  if (c.unreachable > 0) return kExitUnreachable;
  return kExitOk;
}

std::string FleetSummaryLine(const std::vector<NodeReport>& nodes, absl::Duration wall) {
  const FleetCounts c = CountVerdicts(nodes);
  std::vector<std::string> parts;
  for (const auto& [count, verdict] :
       {std::pair{c.ok, NodeVerdict::kOk}, std::pair{c.warn, NodeVerdict::kWarn},
        std::pair{c.wrong, NodeVerdict::kWrong}, std::pair{c.hang, NodeVerdict::kHang},
        std::pair{c.error, NodeVerdict::kError},
        std::pair{c.unauthenticated, NodeVerdict::kUnauthenticated},
        std::pair{c.busy, NodeVerdict::kBusy}}) {
    if (count > 0) parts.push_back(absl::StrCat(count, " ", NodeVerdictName(verdict)));
  }
  if (c.unreachable > 0) {
    std::vector<std::string> names;
    for (const NodeReport& n : nodes) {
      if (n.verdict == NodeVerdict::kUnreachable && names.size() < kMaxNamedUnreachable) {
        names.push_back(n.node);
      }
    }
    const size_t more = static_cast<size_t>(c.unreachable) - names.size();
    parts.push_back(absl::StrCat(c.unreachable, " UNREACHABLE (", absl::StrJoin(names, ", "),
                                 more > 0 ? absl::StrCat(" and ", more, " more") : "", ")"));
  }
  return absl::StrCat("fleet: ", c.nodes, c.nodes == 1 ? " node" : " nodes", " in ",
                      absl::FormatDuration(absl::Trunc(wall, absl::Milliseconds(100))), ": ",
                      absl::StrJoin(parts, ", "));
}

}  // namespace colltest::client
