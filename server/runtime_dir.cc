#include "server/runtime_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace colltest::server {

absl::StatusOr<std::unique_ptr<RuntimeDir>> RuntimeDir::Create(absl::string_view parent) {
  std::string base(parent);
  if (base.empty()) {
    const char* xdg = getenv("XDG_RUNTIME_DIR");
    base = (xdg != nullptr && xdg[0] != '\0') ? xdg : "/tmp";
  }
  std::string templ = absl::StrCat(base, "/colltest-XXXXXX");
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  // mkdtemp creates the directory 0700 atomically; no chmod window to race with.
  if (mkdtemp(buf.data()) == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot create runtime directory in ", base));
  }
  return std::unique_ptr<RuntimeDir>(new RuntimeDir(buf.data()));
}

RuntimeDir::~RuntimeDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace colltest::server
