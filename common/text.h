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
// U+0000..U+001F, DEL U+007F, C1 U+0080..U+009F): newline and escape included; without
// bidirectional controls (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), which would
// show it in another order than it is stored; and without the line and paragraph separators
// U+2028, U+2029. Otherwise INVALID_ARGUMENT naming `field`, e.g. "spec.label: 300 bytes, the
// limit is 256".
absl::Status CheckLabel(absl::string_view field, absl::string_view label);

// `text` safe to print on a terminal or in a log line: valid printable UTF-8 as is, a backslash as
// "\\", every control character (each byte of a C1 one) and every byte of an invalid sequence as
// "\xNN", every format character or line/paragraph separator (Unicode categories Cf, Zl, Zp:
// U+202E, U+2028, U+200B, U+FEFF...) as "\uNNNN" or "\UNNNNNNNN" (lower-case hex). Every piece of
// client text that colltestd logs goes through it.
std::string EscapeForTerminal(absl::string_view text);

}  // namespace colltest::common
