// A RunResult as JSON, written case by case: GET /api/v1/runs/ID of a 4,096-case run built the
// whole document as one string, and 16 such reads at once grew colltestd by 406-656 MiB; here
// only one case's JSON and a small buffer exist at a time, and each case is freed once written.
// The bytes are exactly those of ToJson(run) (json_codec.h).
#pragma once

#include <cstddef>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::http {

// Receives the document in pieces, in order; returns false to stop (the client is gone).
using JsonSink = absl::FunctionRef<bool(absl::string_view)>;

// Pieces are gathered up to this size before they go to the sink: one write of a few bytes per
// case would be thousands of chunks (and syscalls) for a large run.
inline constexpr size_t kRunJsonPieceBytes = 64 * 1024;

// Writes ToJson(run) to `sink`, consuming `run` (its cases are released as they are written).
// Returns false when the sink refused a piece (nothing more is written), true otherwise.
bool WriteRunJson(colltest::v1::RunResult run, JsonSink sink);

// Writes ToJson(event) of a sweep's last event, whose summary is the whole run, the same way.
bool WriteSummaryEventJson(colltest::v1::SweepEvent event, JsonSink sink);

}  // namespace colltest::http
