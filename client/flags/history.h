// `colltest history`: its flags turned into a ListRunsRequest, and the pages of the history
// fetched one after the other for --all.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

// Raw flag values as typed; an unset filter leaves its field at the proto's "any".
struct HistoryFlags {
  std::optional<std::string> label;
  std::optional<std::string> state;    // done, cancelled, failed, interrupted, queued, running
  std::optional<std::string> since;    // see ParseSinceFlag
  std::optional<std::string> variant;  // one variant name
  std::optional<std::string> limit;    // runs per page (the server's default 50, at most 1000)
  std::optional<std::string> page_token;
  bool all = false;  // follow next_page_token to the end
};

// `now` resolves a --since given as a duration ago.
absl::StatusOr<v1::ListRunsRequest> BuildListRunsRequest(const HistoryFlags& flags, absl::Time now);

// --since as Unix milliseconds: a UTC date ("2026-11-01", its midnight), an RFC 3339 time
// ("2026-11-01T08:00:00Z", "2026-11-01T10:00:00+02:00"), or a duration ago in the shared grammar
// (common::ParseDuration: "24h", "90m", "7d"). A bare number is refused, though the shared grammar
// reads it as milliseconds: "--since 2026" is far more likely a year than two seconds ago.
absl::StatusOr<int64_t> ParseSinceFlag(absl::string_view flag, absl::string_view text,
                                       absl::Time now);

// --all stops after this many pages, so that a server that keeps answering with a token (or a
// history that grows faster than it is read) cannot keep the CLI busy forever.
inline constexpr int kMaxHistoryPages = 100;

using FetchRunsPage =
    absl::FunctionRef<absl::StatusOr<v1::ListRunsResponse>(const v1::ListRunsRequest&)>;

// The page asked for by `request`; with `all`, that page and every following one concatenated, at
// most kMaxHistoryPages. The result's next_page_token is the last page's: empty when the history
// was read to its end, otherwise where to continue. A page token the server repeats is an error
// (DATA_LOSS): following it would list the same runs again.
absl::StatusOr<v1::ListRunsResponse> FetchHistory(v1::ListRunsRequest request, bool all,
                                                  FetchRunsPage fetch);

}  // namespace colltest::client
