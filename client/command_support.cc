#include "client/command_support.h"

#include "absl/strings/match.h"
#include "client/exit_code.h"
#include "client/output.h"

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

int WriteOrFail(Streams streams, const absl::StatusOr<std::string>& text,
                const OutputOptions& output) {
  if (!text.ok()) return Fail(streams, text.status());
  absl::Status written = WriteOutput(*text, output.out_path, streams.out);
  if (!written.ok()) return Fail(streams, written);
  return kExitOk;
}

}  // namespace colltest::client
