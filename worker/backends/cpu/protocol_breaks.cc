#include "worker/backends/cpu/protocol_breaks.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace colltest::cpu {
namespace {

// Each name is the rule a switch breaks, as the mutation tests and COLLTEST_BREAK_PROTOCOL
// spell it.
struct BreakName {
  const char* name;
  bool ProtocolBreaks::*flag;
};
constexpr BreakName kBreakNames[] = {
    {"canonicalize", &ProtocolBreaks::skip_canonicalize},
    {"bit_compare", &ProtocolBreaks::float_compare},
    {"rearm", &ProtocolBreaks::skip_rearm},
    {"release_acquire", &ProtocolBreaks::relaxed_barriers},
    {"private_staging", &ProtocolBreaks::shared_staging},
    {"rotation", &ProtocolBreaks::two_buffer_rotation},
    {"same_grid", &ProtocolBreaks::rank_dependent_grid},
    {"uniform_trips", &ProtocolBreaks::divergent_trip_count},
};

}  // namespace

bool ParseProtocolBreaks(const std::string& spec, ProtocolBreaks* out, std::string* error) {
  ProtocolBreaks b;
  for (absl::string_view name : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    const auto* it = std::find_if(std::begin(kBreakNames), std::end(kBreakNames),
                                  [&](const BreakName& k) { return name == k.name; });
    if (it == std::end(kBreakNames)) {
      *error = "unknown protocol break '" + std::string(name) + "' (known: " +
               absl::StrJoin(kBreakNames, ", ",
                             [](std::string* o, const BreakName& k) { o->append(k.name); }) +
               ")";
      return false;
    }
    b.*(it->flag) = true;
  }
  *out = b;
  return true;
}

}  // namespace colltest::cpu
