#include "server/net/caller_key.h"

#include "absl/strings/match.h"

namespace colltest::server {

std::string CallerKey(absl::string_view caller_name) {
  // Only ip peers have a port: "peer:ipv4:A:PORT", "peer:ipv6:[A]:PORT" (the HTTP gateway forwards
  // its caller's address in the same form). Anything else, such as a unix socket peer
  // ("peer:unix:uid=U,pid=P") or a token's name, is kept whole.
  constexpr absl::string_view kIpPeers[] = {"peer:ipv4:", "peer:ipv6:"};
  for (absl::string_view prefix : kIpPeers) {
    if (!absl::StartsWith(caller_name, prefix)) continue;
    const size_t colon = caller_name.rfind(':');
    const size_t bracket = caller_name.rfind(']');
    const bool has_port =
        colon >= prefix.size() && (bracket == absl::string_view::npos || colon > bracket);
    if (has_port) return std::string(caller_name.substr(0, colon));
  }
  return std::string(caller_name);
}

}  // namespace colltest::server
