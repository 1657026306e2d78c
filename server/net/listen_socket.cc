#include "server/net/listen_socket.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace colltest::server {
namespace {

absl::Status SocketError(const std::string& listen, const char* call) {
  return absl::ErrnoToStatus(errno, absl::StrCat("cannot listen on ", listen, ": ", call));
}

absl::StatusOr<UniqueFd> ListenUnix(const std::string& listen, const std::string& path,
                                    int backlog) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot listen on ", listen, ": the path must ",
                                                   "have 1 to ", sizeof(address.sun_path) - 1,
                                                   " characters"));
  }
  std::memcpy(address.sun_path, path.c_str(), path.size());
  struct stat existing {};
  if (lstat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) {
      return absl::AlreadyExistsError(
          absl::StrCat("cannot listen on ", listen, ": a file that is not a socket is there"));
    }
    unlink(path.c_str());
  }
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return SocketError(listen, "socket");
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return SocketError(listen, "bind");
  }
  if (::listen(fd.get(), backlog) != 0) return SocketError(listen, "listen");
  return fd;
}

uint16_t BoundPort(int fd) {
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) return 0;
  if (bound.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
}

absl::StatusOr<UniqueFd> ListenTcp(const std::string& listen, const addrinfo& info, bool v6_only,
                                   int backlog) {
  UniqueFd fd(
      socket(info.ai_family, info.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, info.ai_protocol));
  if (!fd.valid()) return SocketError(listen, "socket");
  const int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (info.ai_family == AF_INET6) {
    // One wildcard "[::]" serves IPv4 too, as with gRPC's listener; a name that resolves to both
    // families gets one socket per family instead.
    const int only = v6_only ? 1 : 0;
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &only, sizeof(only));
  }
  if (bind(fd.get(), info.ai_addr, info.ai_addrlen) != 0) return SocketError(listen, "bind");
  if (::listen(fd.get(), backlog) != 0) return SocketError(listen, "listen");
  return fd;
}

// Splits "host:port" and "[v6]:port".
absl::Status SplitHostPort(const std::string& listen, std::string& host, std::string& port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == listen.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot listen on ", listen, ": expected host:port"));
  }
  host = listen.substr(0, colon);
  port = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return absl::OkStatus();
}

absl::StatusOr<ListenSockets> BindTcp(const std::string& listen, int backlog) {
  std::string host, port;
  COLLTEST_RETURN_IF_ERROR(SplitHostPort(listen, host, port));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int error =
          getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
      error != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot listen on ", listen, ": ", gai_strerror(error)));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, &freeaddrinfo);
  const bool several = found->ai_next != nullptr;
  ListenSockets sockets;
  uint16_t chosen = 0;  // with port 0: the first socket's port, then used by the others
  for (addrinfo* info = found; info != nullptr; info = info->ai_next) {
    if (chosen != 0) {
      auto* in = reinterpret_cast<sockaddr_in*>(info->ai_addr);
      auto* in6 = reinterpret_cast<sockaddr_in6*>(info->ai_addr);
      (info->ai_family == AF_INET ? in->sin_port : in6->sin6_port) = htons(chosen);
    }
    COLLTEST_ASSIGN_OR_RETURN(UniqueFd fd, ListenTcp(listen, *info, several, backlog));
    chosen = BoundPort(fd.get());
    sockets.fds.push_back(std::move(fd));
  }
  const size_t colon = listen.rfind(':');
  sockets.address = absl::StrCat(listen.substr(0, colon), ":", chosen);
  return sockets;
}

}  // namespace

absl::StatusOr<ListenSockets> BindListenSockets(const std::string& listen, int backlog) {
  if (!absl::StartsWith(listen, "unix:")) return BindTcp(listen, backlog);
  std::string path = listen.substr(5);
  if (absl::StartsWith(path, "//")) path = path.substr(2);  // "unix:///abs" as gRPC reads it
  COLLTEST_ASSIGN_OR_RETURN(UniqueFd fd, ListenUnix(listen, path, backlog));
  ListenSockets sockets;
  sockets.fds.push_back(std::move(fd));
  sockets.address = listen;
  sockets.unix_path = path;
  return sockets;
}

}  // namespace colltest::server
