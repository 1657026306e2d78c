// The CLI's commands against a connected Client. Each returns the process exit code and writes
// results to `out` (or --out) and diagnostics to `err`.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "absl/time/time.h"
#include "client/commands/output_options.h"
#include "client/commands/rpc.h"
#include "client/format/format.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

int DevicesCommand(Client& client, const OutputOptions& output, Streams streams);
// With `compare` (--compare-baseline, run_b left empty), the completed run is then compared with
// its machine's baseline and the comparison is printed with the run (FormatRunWithComparison).
// The exit code is the run's when not 0, else 4 when the comparison found a regression. A failed
// comparison (no such baseline) is 3, after the run's report; a run that did not complete is not
// compared.
int RunCommand(Client& client, const v1::SweepSpec& spec,
               const std::optional<v1::CompareRequest>& compare, const OutputOptions& output,
               Streams streams);
// Like `run`, with a progress line on `err` per streamed case.
int SweepCommand(Client& client, const v1::SweepSpec& spec,
                 const std::optional<v1::CompareRequest>& compare, const OutputOptions& output,
                 Streams streams);
int GetCommand(Client& client, const std::string& run_id, const OutputOptions& output,
               Streams streams);
int CancelCommand(Client& client, const std::string& run_id, Streams streams);

// `history` (alias `runs`): the page `request` asks for or, with `all`, every page from there on
// (FetchHistory, history.h). When --all stops at its page bound, a warning on `err` says where to
// continue.
int HistoryCommand(Client& client, const v1::ListRunsRequest& request, bool all,
                   const OutputOptions& output, Streams streams);
int BaselineSetCommand(Client& client, const v1::SetBaselineRequest& request,
                       const OutputOptions& output, Streams streams);
int BaselineListCommand(Client& client, const v1::ListBaselinesRequest& request,
                        const OutputOptions& output, Streams streams);
// The report is written whatever the verdict; the exit code is 4 when it found a regression.
int CompareCommand(Client& client, const v1::CompareRequest& request, const OutputOptions& output,
                   Streams streams);
// Exit code from the verdict (exit_code.h); the report is written whatever the verdict.
int HealthCommand(Client& client, const v1::HealthRequest& request, const OutputOptions& output,
                  Streams streams);

// `tune`: one sweep of `spec` (from BuildTuneSpec) with progress on `err`, then its crossover
// table (tune.h) on `out` as table or json and, with --out, as JSON in that file whatever the
// format. No table is written when the run did not complete or no m had an OK variant (3);
// otherwise the exit code is the run's verdict, so a WRONG or HANG case is not hidden by a table
// built from the other variants.
int TuneCommand(Client& client, const v1::SweepSpec& spec, const OutputOptions& output,
                Streams streams);

// How long `health` waits for its verdict: max(120 s, 40 x the per-case timeout) at level quick,
// max(10 min, 120 x) at standard, max(30 min, 400 x) at long. The check runs dozens of cases (far
// more at the deeper levels), each of which may take up to its timeout when it hangs; the deadline
// exists so that the check itself cannot hang, and colltestd answers BUSY with its last verdict
// rather than miss it (docs/neighbours.md).
absl::Duration HealthDeadline(uint32_t timeout_ms, v1::HealthLevel level = v1::HEALTH_LEVEL_QUICK);

}  // namespace colltest::client
