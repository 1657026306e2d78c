// What this colltestd binary is: its release version and the commit it was built from, as
// reported by --version and ListDevices and recorded with every run (MachineIdentity) and in the
// metrics (colltest_build_info).
#pragma once

namespace colltest::server {

// The release version (the project's version in CMake).
const char* Version();

// The git commit of the source tree at configure time, `git rev-parse --short=12 HEAD`, with
// "-dirty" when the tree had uncommitted changes then; "unknown" outside a git checkout.
const char* BuildCommit();

}  // namespace colltest::server
