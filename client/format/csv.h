// A CSV field for the client's CSV outputs.
#pragma once

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace colltest::client {

// `raw` escaped for a terminal (common::EscapeForTerminal), then quoted as RFC 4180 asks, only
// where needed so that plain rows stay greppable.
std::string CsvField(absl::string_view raw);

// A number, or an empty cell when it was not measured (`present` false): a spreadsheet reads an
// empty cell as "no value", where a 0 would pass for a measurement and drag every average down.
template <typename Number>
std::string CsvFigure(Number value, bool present) {
  return present ? absl::StrCat(value) : std::string();
}

}  // namespace colltest::client
