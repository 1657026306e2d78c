// Rules for text that comes from a client: labels stored and shown to others, and any such text
// printed on a terminal or written to a log. A label is one line of printable UTF-8, so it can
// neither forge a log line nor move a terminal's cursor; what is printed anyway is escaped.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace colltest::common {

inline constexpr size_t kMaxLabelBytes = 256;

// True when `text` is well-formed UTF-8: no stray continuation bytes, no truncated sequences, no
// overlong encodings, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF.
bool IsValidUtf8(absl::string_view text);

// OK when `label` is at most kMaxLabelBytes bytes of valid UTF-8 without control characters (C0
// U+0000..U+001F, DEL U+007F, C1 U+0080..U+009F): newline and escape included. Otherwise
// INVALID_ARGUMENT naming `field`, e.g. "spec.label: 300 bytes, the limit is 256".
absl::Status CheckLabel(absl::string_view field, absl::string_view label);

// `text` safe to print: valid printable UTF-8 as is, a backslash as "\\", every control character
// (each byte of a C1 one) and every byte of an invalid sequence as "\xNN" (lower-case hex).
std::string EscapeForTerminal(absl::string_view text);

}  // namespace colltest::common
