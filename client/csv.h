// A CSV field for the client's CSV outputs.
#ifndef COLLTEST_CLIENT_CSV_H_
#define COLLTEST_CLIENT_CSV_H_

#include <string>

#include "absl/strings/string_view.h"

namespace colltest::client {

// `raw` escaped for a terminal (common::EscapeForTerminal), then quoted as RFC 4180 asks, only
// where needed so that plain rows stay greppable.
std::string CsvField(absl::string_view raw);

}  // namespace colltest::client

#endif  // COLLTEST_CLIENT_CSV_H_
