// What this colltestd binary was built from, as recorded with every run (MachineIdentity).
// The release version is Version() in server/options.h.
#pragma once

namespace colltest::server {

// The git commit of the source tree at configure time, `git rev-parse --short=12 HEAD`, with
// "-dirty" when the tree had uncommitted changes then; "unknown" outside a git checkout.
const char* BuildCommit();

}  // namespace colltest::server
