// Helpers shared by the files that implement the commands of commands.h.
#ifndef COLLTEST_CLIENT_COMMAND_SUPPORT_H_
#define COLLTEST_CLIENT_COMMAND_SUPPORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/commands.h"

namespace colltest::client {

// True for colltestd's refusal of a run on devices that other processes use: FAILED_PRECONDITION
// with a message that starts "BUSY:" (SweepSpec.force).
bool IsBusyRefusal(const absl::Status& status);

// Prints `status` as the one error line and returns its exit code: 5 for a BUSY refusal, else 3.
int Fail(Streams streams, const absl::Status& status);

// Writes `text` to stdout or --out; 0, or 3 with the error printed when `text` is an error or
// could not be written.
int WriteOrFail(Streams streams, const absl::StatusOr<std::string>& text,
                const OutputOptions& output);

}  // namespace colltest::client

#endif  // COLLTEST_CLIENT_COMMAND_SUPPORT_H_
