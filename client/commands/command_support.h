// Helpers shared by the files that implement the commands of commands.h.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/commands/output_options.h"

namespace colltest::client {

// True for colltestd's refusal of a run on devices that other processes use: FAILED_PRECONDITION
// with a message that starts "BUSY:" (SweepSpec.force).
bool IsBusyRefusal(const absl::Status& status);

// Prints `status` as the one error line and returns its exit code: 5 for a BUSY refusal, else 3.
int Fail(Streams streams, const absl::Status& status);

// The same for a status of a call to the server at output.server: when it says that the server
// could not be used (unreachable, not colltestd, TLS or token settings that do not match), the
// error line names the address and a `hint:` line follows it (hints.h).
int Fail(Streams streams, const absl::Status& status, const OutputOptions& output);

// Fail for a command that has no result to report (the server unreachable, the call refused or
// failed). With --format junit --out FILE, FILE still gets a report of the failure
// (FormatFailureJunit), so that CI shows why rather than a missing file. Not for a failure after
// the result was written: that file must stay.
int FailWithoutResult(Streams streams, const absl::Status& status, const OutputOptions& output);

// Writes `text` to stdout or --out; 0, or 3 with the error printed when `text` is an error or
// could not be written.
int WriteOrFail(Streams streams, const absl::StatusOr<std::string>& text,
                const OutputOptions& output);

}  // namespace colltest::client
