#include "worker/backends/cpu/protocol_breaks_env.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"

namespace colltest::cpu {

absl::StatusOr<ProtocolBreaks> ProtocolBreaksFromEnvironment() {
  ProtocolBreaks breaks;
  const char* spec = std::getenv("COLLTEST_BREAK_PROTOCOL");
  if (spec == nullptr || *spec == '\0') return breaks;
  std::string error;
  if (!ParseProtocolBreaks(spec, &breaks, &error)) {
    return absl::InvalidArgumentError("COLLTEST_BREAK_PROTOCOL: " + error);
  }
  // On stderr, which colltestd keeps in the worker's log: a broken run must say so.
  std::fprintf(stderr, "colltest-worker: PROTOCOL DELIBERATELY BROKEN for testing: %s\n", spec);
  return breaks;
}

}  // namespace colltest::cpu
