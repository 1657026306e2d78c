#include "client/commands/output.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace colltest::client {

absl::Status WriteOutput(absl::string_view text, const std::string& path, std::ostream& out) {
  if (path.empty()) {
    out << text;
    out.flush();
    return absl::OkStatus();
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (file) {
    file << text;
    file.close();
  }
  if (!file) {
    return absl::InvalidArgumentError(
        absl::StrCat("--out: cannot write '", path, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void PrintError(std::ostream& err, const absl::Status& status) {
  err << "colltest: " << absl::StatusCodeToString(status.code()) << ": " << status.message()
      << "\n";
  err.flush();
}

void PrintHint(std::ostream& err, absl::string_view hint) {
  err << "hint: " << hint << "\n";
  err.flush();
}

}  // namespace colltest::client
