#include "worker/backends/cpu/protocol_breaks.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_split.h"

namespace colltest::cpu {

bool ParseProtocolBreaks(const std::string& spec, ProtocolBreaks* out, std::string* error) {
  ProtocolBreaks b;
  for (absl::string_view name : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    if (name == "canonicalize") {
      b.skip_canonicalize = true;
    } else if (name == "bit_compare") {
      b.float_compare = true;
    } else if (name == "rearm") {
      b.skip_rearm = true;
    } else if (name == "release_acquire") {
      b.relaxed_barriers = true;
    } else if (name == "private_staging") {
      b.shared_staging = true;
    } else if (name == "rotation") {
      b.two_buffer_rotation = true;
    } else {
      *error = "unknown protocol break '" + std::string(name) +
               "' (known: canonicalize, bit_compare, rearm, release_acquire, private_staging, "
               "rotation)";
      return false;
    }
  }
  *out = b;
  return true;
}

const ProtocolBreaks& ActiveProtocolBreaks() {
  static const ProtocolBreaks breaks = [] {
    ProtocolBreaks b;
    const char* spec = std::getenv("COLLTEST_BREAK_PROTOCOL");
    if (spec == nullptr || *spec == '\0') return b;
    std::string error;
    if (!ParseProtocolBreaks(spec, &b, &error)) {
      std::fprintf(stderr, "colltest-worker: COLLTEST_BREAK_PROTOCOL: %s\n", error.c_str());
      std::abort();
    }
    std::fprintf(stderr, "colltest-worker: PROTOCOL DELIBERATELY BROKEN for testing: %s\n", spec);
    return b;
  }();
  return breaks;
}

}  // namespace colltest::cpu
