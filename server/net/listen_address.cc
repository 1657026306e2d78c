#include "server/net/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace colltest::server {

std::string ListenHost(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return listen;
  return listen.substr(0, colon);
}

bool IsLoopbackListen(const std::string& listen) {
  if (absl::StartsWith(listen, "unix:")) return true;
  const std::string host_and_brackets = ListenHost(listen);
  absl::string_view host = host_and_brackets;
  if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");
  if (host == "localhost") return true;
  const std::string text(host);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;  // a wildcard, a routable address or a name that may resolve to one
}

}  // namespace colltest::server
