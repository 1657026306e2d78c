#include "server/build_info.h"

// Set by server/CMakeLists.txt; a build outside it still links.
#ifndef COLLTEST_VERSION
#define COLLTEST_VERSION "unknown"
#endif
#ifndef COLLTEST_BUILD_COMMIT
#define COLLTEST_BUILD_COMMIT "unknown"
#endif

namespace colltest::server {

const char* Version() { return COLLTEST_VERSION; }

const char* BuildCommit() { return COLLTEST_BUILD_COMMIT; }

}  // namespace colltest::server
