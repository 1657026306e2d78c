#include "client/commands/command_support.h"

#include "absl/strings/match.h"
#include "client/commands/exit_code.h"
#include "client/commands/hints.h"
#include "client/commands/output.h"
#include "client/commands/progress.h"
#include "client/format/color.h"
#include "client/format/format.h"

namespace colltest::client {

bool IsBusyRefusal(const absl::Status& status) {
  return absl::IsFailedPrecondition(status) && absl::StartsWith(status.message(), "BUSY:");
}

int Fail(Streams streams, const absl::Status& status) {
  PrintError(streams.err, status);
  // Every command's RPC failure comes through here, so run, sweep and tune all tell "the devices
  // were in use, nothing ran" (retry later, or --force) apart from a broken request or server.
  return IsBusyRefusal(status) ? kExitBusy : kExitError;
}

namespace {

int PrintExplained(Streams streams, const ExplainedFailure& explained) {
  const int code = Fail(streams, explained.status);
  if (!explained.hint.empty()) PrintHint(streams.err, explained.hint);
  return code;
}

}  // namespace

int Fail(Streams streams, const absl::Status& status, const OutputOptions& output) {
  return PrintExplained(streams, ExplainFailure(status, output.server));
}

int FailWithoutResult(Streams streams, const absl::Status& status, const OutputOptions& output) {
  const ExplainedFailure explained = ExplainFailure(status, output.server);
  const int code = PrintExplained(streams, explained);
  if (output.format != OutputFormat::kJunit || output.out_path.empty()) return code;
  // The report says what the error line says: the status with the address it was about.
  const std::string report = FormatFailureJunit(explained.status, output.command, output.server);
  absl::Status written = WriteOutput(report, output.out_path, streams.out);
  if (!written.ok()) PrintError(streams.err, written);
  return code;
}

int WriteOrFail(Streams streams, const absl::StatusOr<std::string>& text,
                const OutputOptions& output) {
  if (!text.ok()) return Fail(streams, text.status());
  // Only a table on the terminal (or --color always): a file and the other formats are read by
  // programs.
  const bool color = output.format == OutputFormat::kTable && output.out_path.empty() &&
                     ColorFor(output, streams.out);
  absl::Status written =
      WriteOutput(color ? PaintVerdicts(*text) : *text, output.out_path, streams.out);
  if (!written.ok()) return Fail(streams, written);
  return kExitOk;
}

}  // namespace colltest::client
