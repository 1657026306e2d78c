#include "client/flags/history.h"

#include <algorithm>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/flags/flags.h"
#include "common/names.h"
#include "common/parse.h"
#include "common/status_macros.h"

namespace colltest::client {
namespace {

constexpr absl::string_view kSinceExpected =
    "a date (2026-11-01), an RFC 3339 time (2026-11-01T08:00:00Z) or a duration ago with its "
    "unit (24h, 90m, 7d)";
constexpr absl::string_view kStatesExpected =
    "one of done, cancelled, failed, interrupted, queued, running";

absl::Status SinceError(absl::string_view flag, absl::string_view text) {
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": cannot parse '", text, "': expected ", kSinceExpected));
}

bool AllDigits(absl::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

absl::StatusOr<v1::RunState> ParseStateFlag(absl::string_view flag, absl::string_view text) {
  std::optional<v1::RunState> state = common::ParseRunStateName(absl::StripAsciiWhitespace(text));
  if (!state.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": unknown state '", text, "': expected ", kStatesExpected));
  }
  return *state;
}

absl::StatusOr<v1::Variant> ParseVariantFlag(absl::string_view flag, absl::string_view text) {
  std::optional<v1::Variant> variant = common::ParseVariantName(absl::StripAsciiWhitespace(text));
  if (!variant.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": unknown variant '", text,
                     "': expected one of one_stage, two_kernel, lamport, lamport_tb, nccl, auto"));
  }
  return *variant;
}

}  // namespace

absl::StatusOr<int64_t> ParseSinceFlag(absl::string_view flag, absl::string_view text,
                                       absl::Time now) {
  const std::string trimmed(absl::StripAsciiWhitespace(text));
  absl::Time time;
  std::string unused;
  if (absl::ParseTime("%Y-%m-%d", trimmed, absl::UTCTimeZone(), &time, &unused) ||
      absl::ParseTime(absl::RFC3339_full, trimmed, absl::UTCTimeZone(), &time, &unused)) {
    if (time < absl::UnixEpoch()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": '", trimmed, "' is before 1970-01-01"));
    }
    return absl::ToUnixMillis(time);
  }
  // Anything with a '-' or ':' meant to be a date; the duration grammar's message would mislead.
  if (AllDigits(trimmed) || trimmed.find_first_of("-:") != std::string::npos) {
    return SinceError(flag, text);
  }
  absl::StatusOr<absl::Duration> ago = common::ParseDuration(flag, trimmed);
  if (!ago.ok()) return SinceError(flag, text);
  return std::max<int64_t>(0, absl::ToUnixMillis(now - *ago));
}

absl::StatusOr<v1::ListRunsRequest> BuildListRunsRequest(const HistoryFlags& flags,
                                                         absl::Time now) {
  v1::ListRunsRequest request;
  if (flags.label.has_value()) request.set_label(*flags.label);
  if (flags.state.has_value()) {
    COLLTEST_ASSIGN_OR_RETURN(const v1::RunState state, ParseStateFlag("--state", *flags.state));
    request.set_state(state);
  }
  if (flags.since.has_value()) {
    COLLTEST_ASSIGN_OR_RETURN(const int64_t since, ParseSinceFlag("--since", *flags.since, now));
    request.set_since_unix_ms(since);
  }
  if (flags.variant.has_value()) {
    COLLTEST_ASSIGN_OR_RETURN(const v1::Variant variant,
                              ParseVariantFlag("--variant", *flags.variant));
    request.set_variant(variant);
  }
  if (flags.limit.has_value()) {
    COLLTEST_ASSIGN_OR_RETURN(const uint32_t limit, ParseUint32Flag("--limit", *flags.limit));
    request.set_limit(limit);
  }
  if (flags.page_token.has_value()) request.set_page_token(*flags.page_token);
  return request;
}

absl::StatusOr<v1::ListRunsResponse> FetchHistory(v1::ListRunsRequest request, bool all,
                                                  FetchRunsPage fetch) {
  v1::ListRunsResponse history;
  std::set<std::string> tokens_seen;
  if (!request.page_token().empty()) tokens_seen.insert(request.page_token());
  for (int page = 0; page < (all ? kMaxHistoryPages : 1); ++page) {
    COLLTEST_ASSIGN_OR_RETURN(v1::ListRunsResponse response, fetch(request));
    for (v1::RunSummary& run : *response.mutable_runs()) *history.add_runs() = std::move(run);
    history.set_next_page_token(response.next_page_token());
    if (response.next_page_token().empty()) break;
    if (!tokens_seen.insert(response.next_page_token()).second) {
      return absl::DataLossError(absl::StrCat("the server answered page token '",
                                              response.next_page_token(),
                                              "' twice: the history cannot be followed"));
    }
    request.set_page_token(response.next_page_token());
  }
  return history;
}

}  // namespace colltest::client
