#include "client/fleet/npd.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "client/commands/commands.h"
#include "client/commands/exit_code.h"
#include "client/fleet/fleet_verdict.h"
#include "common/names.h"
#include "common/text.h"

namespace colltest::client {
namespace {

v1::CaseStatus ConditionStatus(NpdCondition condition) {
  return condition == NpdCondition::kCollectiveHang ? v1::CASE_STATUS_HANG : v1::CASE_STATUS_WRONG;
}

absl::string_view NoProblemText(NpdCondition condition) {
  return condition == NpdCondition::kCollectiveHang ? "no collective hang"
                                                    : "no wrong collective result";
}

// Anywhere in the answer, not only its overall status: a check that ended in ERROR after a rank
// hung still saw the hang.
bool Saw(const v1::HealthResponse& health, v1::CaseStatus status) {
  const auto is = [status](const auto& item) { return item.status() == status; };
  return health.status() == status ||
         std::any_of(health.ranks().begin(), health.ranks().end(), is) ||
         std::any_of(health.pairs().begin(), health.pairs().end(), is) ||
         std::any_of(health.cases().begin(), health.cases().end(), is);
}

// Server text may hold newlines or escape sequences: NPD keeps only the first line, and the
// condition's message ends up on terminals (kubectl describe node).
std::string OneLine(absl::string_view text) {
  std::string line(text);
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::replace(line.begin(), line.end(), '\r', ' ');
  return common::EscapeForTerminal(absl::StripAsciiWhitespace(line));
}

// "(busy: REASON; verdict of 45s ago) " or "(cached, 30s old) ": why the verdict is not new.
std::string Provenance(const v1::HealthResponse& health, absl::Time now) {
  const std::string age = VerdictAge(health, now);
  if (health.busy()) {
    return absl::StrCat("(busy: ", health.busy_reason(), "; verdict of ",
                        age.empty() ? "an earlier check" : absl::StrCat(age, " ago"), ") ");
  }
  if (health.cached()) {
    return absl::StrCat("(cached", age.empty() ? "" : absl::StrCat(", ", age, " old"), ") ");
  }
  return "";
}

// The verdict's message without the status it often starts with ("HANG: rank 1 ..."), which the
// line says once in front.
absl::string_view Body(const v1::HealthResponse& health) {
  absl::string_view body = health.message();
  if (absl::ConsumePrefix(&body, common::CaseStatusName(health.status())))
    absl::ConsumePrefix(&body, ":");
  return absl::StripLeadingAsciiWhitespace(body);
}

NpdResult FromAnswer(NpdCondition condition, const v1::HealthResponse& health, absl::Time now) {
  const absl::string_view status = common::CaseStatusName(health.status());
  const std::string provenance = Provenance(health, now);
  const v1::CaseStatus wanted = ConditionStatus(condition);
  if (Saw(health, wanted)) {
    const std::string culprit = CulpritText(FindCulprit(health));
    return {kNpdTrue, absl::StrCat(provenance, common::CaseStatusName(wanted),
                                   culprit.empty() ? "" : " on ", culprit, ": ", Body(health))};
  }
  if (CarriedVerdictCode(health) == kExitError) {
    return {kNpdUnknown, absl::StrCat(provenance, "unknown: the check did not finish: ", status,
                                      ": ", Body(health))};
  }
  return {kNpdFalse,
          absl::StrCat(provenance, NoProblemText(condition), ": ", status, ": ", Body(health))};
}

}  // namespace

absl::StatusOr<NpdCondition> ParseNpdCondition(absl::string_view text) {
  if (text == "CollectiveHang") return NpdCondition::kCollectiveHang;
  if (text == "CollectiveWrong") return NpdCondition::kCollectiveWrong;
  return absl::InvalidArgumentError(absl::StrCat("--npd: unknown condition '",
                                                 common::EscapeForTerminal(text),
                                                 "' (expected CollectiveHang or CollectiveWrong)"));
}

absl::Status CheckNpdFlags(const HealthFlags& flags, OutputFormat format,
                           const std::string& out_path) {
  if (flags.targets.has_value() || flags.targets_file.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--npd with ", flags.targets.has_value() ? "--targets" : "--targets-file",
                     ": the NPD plugin checks the one node it runs on (--server), not a fleet"));
  }
  if (format != OutputFormat::kTable) {
    return absl::InvalidArgumentError(
        absl::StrCat("--npd with --format ", OutputFormatName(format),
                     ": NPD reads one line of text; leave --format at table"));
  }
  if (!out_path.empty()) {
    return absl::InvalidArgumentError("--npd with --out: NPD reads the line from stdout");
  }
  return absl::OkStatus();
}

NpdResult NpdVerdict(NpdCondition condition, const absl::StatusOr<v1::HealthResponse>& answer,
                     absl::Time now) {
  NpdResult result;
  if (!answer.ok()) {
    result = {kNpdUnknown,
              absl::StrCat("unknown: no answer: ", absl::StatusCodeToString(answer.status().code()),
                           ": ", answer.status().message())};
  } else if (answer->busy() && answer->status() == v1::CASE_STATUS_UNSPECIFIED) {
    result = {kNpdUnknown,
              absl::StrCat("unknown: busy and no earlier verdict: ", answer->busy_reason())};
  } else {
    result = FromAnswer(condition, *answer, now);
  }
  result.line = OneLine(result.line);
  return result;
}

int NpdCommand(Client& client, NpdCondition condition, const v1::HealthRequest& request,
               Streams streams) {
  const absl::StatusOr<v1::HealthResponse> answer =
      client.Health(request, HealthDeadline(request.timeout_ms(), request.level()));
  const NpdResult result = NpdVerdict(condition, answer, absl::Now());
  streams.out << result.line << "\n";
  streams.out.flush();
  return result.exit_code;
}

}  // namespace colltest::client
