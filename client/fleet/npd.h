// node-problem-detector mode (`colltest health --npd CONDITION`): the check against one server as
// an NPD custom plugin reads it. NPD takes the exit code as the condition's state (0 false,
// 1 true, 2 unknown) and the first line of stdout as its message, so exactly one line is printed
// whatever happens.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/commands/output_options.h"
#include "client/commands/rpc.h"
#include "client/flags/flags.h"
#include "client/format/format.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

// NPD's plugin protocol (custom plugin monitor, exit status).
inline constexpr int kNpdFalse = 0;
inline constexpr int kNpdTrue = 1;
inline constexpr int kNpdUnknown = 2;

enum class NpdCondition {
  kCollectiveHang,   // true when the check saw a collective HANG
  kCollectiveWrong,  // true when the check saw a WRONG result
};

// "CollectiveHang" or "CollectiveWrong", exactly as NPD's rule names the condition.
absl::StatusOr<NpdCondition> ParseNpdCondition(absl::string_view text);

// --npd asks one server and prints one line, so a fleet list, another format or --out would be
// ignored or break the plugin protocol: refused, naming the flag.
absl::Status CheckNpdFlags(const HealthFlags& flags, OutputFormat format,
                           const std::string& out_path);

struct NpdResult {
  int exit_code = kNpdUnknown;
  std::string line;  // one line, no newline, printable
};

// The condition's state from the call's outcome at `now`. Unknown: the call failed, the check
// ended in ERROR without showing the condition, or the node was BUSY with no earlier verdict. A
// BUSY answer with an earlier verdict is judged on that verdict, and the line gives its age.
NpdResult NpdVerdict(NpdCondition condition, const absl::StatusOr<v1::HealthResponse>& answer,
                     absl::Time now);

// Asks `client` with `request` (within HealthDeadline) and prints NpdVerdict's line on `out`.
int NpdCommand(Client& client, NpdCondition condition, const v1::HealthRequest& request,
               Streams streams);

}  // namespace colltest::client
