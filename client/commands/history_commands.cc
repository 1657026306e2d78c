// The commands over the run history: `history`, `baseline set`, `baseline list` and `compare`.
#include "absl/status/statusor.h"
#include "client/commands/command_support.h"
#include "client/commands/commands.h"
#include "client/commands/exit_code.h"
#include "client/flags/history.h"
#include "common/text.h"

namespace colltest::client {

int HistoryCommand(Client& client, const v1::ListRunsRequest& request, bool all,
                   const OutputOptions& output, Streams streams) {
  absl::StatusOr<v1::ListRunsResponse> runs = FetchHistory(
      request, all, [&client](const v1::ListRunsRequest& page) { return client.ListRuns(page); });
  if (!runs.ok()) return FailWithoutResult(streams, runs.status(), output);
  if (int code = WriteOrFail(streams, FormatRuns(*runs, output.format), output); code != kExitOk) {
    return code;
  }
  if (all && !runs->next_page_token().empty()) {
    streams.err << "colltest: warning: --all stopped after " << kMaxHistoryPages
                << " pages; continue with --page-token "
                << common::EscapeForTerminal(runs->next_page_token()) << "\n";
  } else if (output.format == OutputFormat::kCsv && !runs->next_page_token().empty()) {
    // The table and the JSON carry the token; a CSV file has no place for it.
    streams.err << "colltest: more runs: --page-token "
                << common::EscapeForTerminal(runs->next_page_token()) << "\n";
  }
  return kExitOk;
}

int BaselineSetCommand(Client& client, const v1::SetBaselineRequest& request,
                       const OutputOptions& output, Streams streams) {
  absl::StatusOr<v1::Baseline> baseline = client.SetBaseline(request);
  if (!baseline.ok()) return Fail(streams, baseline.status(), output);
  return WriteOrFail(streams, FormatBaseline(*baseline, output.format), output);
}

int BaselineListCommand(Client& client, const v1::ListBaselinesRequest& request,
                        const OutputOptions& output, Streams streams) {
  absl::StatusOr<v1::ListBaselinesResponse> baselines = client.ListBaselines(request);
  if (!baselines.ok()) return Fail(streams, baselines.status(), output);
  return WriteOrFail(streams, FormatBaselines(*baselines, output.format), output);
}

int CompareCommand(Client& client, const v1::CompareRequest& request, const OutputOptions& output,
                   Streams streams) {
  absl::StatusOr<v1::CompareResponse> comparison = client.Compare(request);
  if (!comparison.ok()) return FailWithoutResult(streams, comparison.status(), output);
  if (int code = WriteOrFail(streams, FormatCompare(*comparison, output.format), output);
      code != kExitOk) {
    return code;
  }
  return ExitCodeForComparison(*comparison);
}

}  // namespace colltest::client
