// What a colltest binary is: its release version, the commit it was built from and the build
// type, as `--version` prints them for colltest, colltestd and colltest-worker.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace colltest::common {

// The project's version in CMake, e.g. "0.1.0".
const char* Version();
// `git rev-parse --short HEAD` of the source tree at configure time, with "-dirty" when the tree
// had uncommitted changes then; "unknown" outside a git checkout.
const char* BuildCommit();
// CMAKE_BUILD_TYPE, e.g. "RelWithDebInfo"; "unknown" when none was set.
const char* BuildType();

// "colltest 0.1.0 (commit dd2f674, RelWithDebInfo)" for `program` "colltest".
std::string VersionLine(absl::string_view program);

}  // namespace colltest::common
