// Colour on a terminal: verdicts in tables and progress lines (OK green, WRONG and ERROR red, HANG
// bold red, WARN and BUSY yellow). `--color auto` (the default) colours a terminal whose TERM is
// not `dumb` unless NO_COLOR is set to anything but "" (no-color.org); `--color always` colours
// even a pipe (and wins over NO_COLOR, as that convention lets a command-line flag), `never`
// nothing. JSON, CSV and JUnit are never coloured: their readers are programs.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace colltest::client {

enum class ColorChoice { kAuto, kAlways, kNever };

// "auto", "always" or "never" (--color), case-insensitive.
absl::StatusOr<ColorChoice> ParseColorChoice(absl::string_view text);

// Whether to colour a stream: `terminal` says whether it is one; `no_color` and `term` are the
// NO_COLOR and TERM variables (nullptr when unset).
bool UseColor(ColorChoice choice, bool terminal, const char* no_color, const char* term);

// `word` in its verdict's colour, or as is when it is no verdict.
std::string PaintVerdict(absl::string_view word);

// `text` with every verdict that stands as a word of its own (OK, WRONG, HANG, ...) painted.
std::string PaintVerdicts(absl::string_view text);

}  // namespace colltest::client
