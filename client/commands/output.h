// Where command output and errors go.
#pragma once

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace colltest::client {

// Writes `text` to the file `path` (--out), or to `out` when `path` is empty.
absl::Status WriteOutput(absl::string_view text, const std::string& path, std::ostream& out);

// "colltest: <CODE>: <message>", the one error line scripts match on. A server's message is kept
// verbatim, since INVALID_ARGUMENT messages name the offending field.
void PrintError(std::ostream& err, const absl::Status& status);

// "hint: <hint>", the line after the error line that says what to do about it (hints.h).
void PrintHint(std::ostream& err, absl::string_view hint);

}  // namespace colltest::client
