#include "common/version.h"

#include "absl/strings/str_cat.h"

namespace colltest::common {

std::string VersionLine(absl::string_view program) {
  return absl::StrCat(program, " ", Version(), " (commit ", BuildCommit(), ", ", BuildType(), ")");
}

}  // namespace colltest::common
