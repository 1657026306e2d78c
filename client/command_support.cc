#include "client/command_support.h"

#include "client/exit_code.h"
#include "client/output.h"

namespace colltest::client {

int Fail(Streams streams, const absl::Status& status) {
  PrintError(streams.err, status);
  return kExitError;
}

int WriteOrFail(Streams streams, const absl::StatusOr<std::string>& text,
                const OutputOptions& output) {
  if (!text.ok()) return Fail(streams, text.status());
  absl::Status written = WriteOutput(*text, output.out_path, streams.out);
  if (!written.ok()) return Fail(streams, written);
  return kExitOk;
}

}  // namespace colltest::client
