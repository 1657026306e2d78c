// What this colltestd binary was built from, as recorded with every run (MachineIdentity) and
// exported as colltest_build_info (server/metrics.h).
#pragma once

namespace colltest::server {

// The release version, the project's version in CMake (the same text as Version() of
// server/options.h).
const char* BuildVersion();

// The git commit of the source tree at configure time, `git rev-parse --short=12 HEAD`, with
// "-dirty" when the tree had uncommitted changes then; "unknown" outside a git checkout.
const char* BuildCommit();

}  // namespace colltest::server
