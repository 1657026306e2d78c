#include "server/net/peer_names.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace colltest::server {
namespace {

std::string Ipv4(const in_addr& address, uint16_t port) {
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &address, text, sizeof(text));
  return absl::StrCat("ipv4:", text, ":", ntohs(port));
}

std::string Ipv6(const sockaddr_in6& peer) {
  // A dual-stack socket sees IPv4 clients as ::ffff:a.b.c.d; gRPC names those ipv4 too.
  if (IN6_IS_ADDR_V4MAPPED(&peer.sin6_addr)) {
    in_addr v4{};
    std::memcpy(&v4, &peer.sin6_addr.s6_addr[12], sizeof(v4));
    return Ipv4(v4, peer.sin6_port);
  }
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, &peer.sin6_addr, text, sizeof(text));
  const std::string scope = peer.sin6_scope_id != 0 ? absl::StrCat("%", peer.sin6_scope_id) : "";
  return absl::StrCat("ipv6:[", text, scope, "]:", ntohs(peer.sin6_port));
}

std::string Unix(int fd) {
  ucred credentials{};
  socklen_t size = sizeof(credentials);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) return "unix:";
  return absl::StrCat("unix:uid=", credentials.uid, ",pid=", credentials.pid);
}

}  // namespace

bool PeerNames::Record(int fd, std::string address) {
  struct stat info {};
  if (fstat(fd, &info) != 0) return false;
  absl::MutexLock lock(&mu_);
  by_fd_.insert_or_assign(fd, Entry{info.st_dev, info.st_ino, std::move(address), false});
  return true;
}

int PeerNames::RecordedFd(absl::string_view grpc_peer) const {
  absl::string_view number = grpc_peer;
  int fd = -1;
  if (!absl::ConsumePrefix(&number, "fd:") || !absl::SimpleAtoi(number, &fd) || fd < 0) return -1;
  struct stat info {};
  if (fstat(fd, &info) != 0) return -1;
  const auto it = by_fd_.find(fd);
  if (it == by_fd_.end() || it->second.device != info.st_dev || it->second.inode != info.st_ino) {
    return -1;
  }
  return fd;
}

std::string PeerNames::Resolve(absl::string_view grpc_peer) const {
  absl::MutexLock lock(&mu_);
  const int fd = RecordedFd(grpc_peer);
  if (fd < 0 || by_fd_.at(fd).address.empty()) return std::string(grpc_peer);
  return by_fd_.at(fd).address;
}

void PeerNames::MarkProven(absl::string_view grpc_peer) {
  absl::MutexLock lock(&mu_);
  if (const int fd = RecordedFd(grpc_peer); fd >= 0) by_fd_.at(fd).proven = true;
}

bool PeerNames::IsProven(int fd, dev_t device, ino_t inode) const {
  absl::MutexLock lock(&mu_);
  const auto it = by_fd_.find(fd);
  return it != by_fd_.end() && it->second.device == device && it->second.inode == inode &&
         it->second.proven;
}

PeerNames& HandedPeerNames() {
  static PeerNames* const names =
      new PeerNames();  // never destroyed: gRPC threads may outlive main
  return *names;
}

std::string PeerAddress(absl::string_view grpc_peer) {
  return HandedPeerNames().Resolve(grpc_peer);
}

void MarkCallAuthenticated(absl::string_view grpc_peer) { HandedPeerNames().MarkProven(grpc_peer); }

std::string PeerHost(absl::string_view address) {
  if (absl::ConsumePrefix(&address, "ipv4:"))
    return std::string(address.substr(0, address.rfind(':')));
  if (absl::ConsumePrefix(&address, "ipv6:["))
    return std::string(address.substr(0, address.rfind(']')));
  return "";
}

std::string DescribePeer(int fd) {
  sockaddr_storage peer{};
  socklen_t size = sizeof(peer);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &size) != 0) return "";
  switch (peer.ss_family) {
    case AF_INET: {
      const auto& v4 = reinterpret_cast<const sockaddr_in&>(peer);
      return Ipv4(v4.sin_addr, v4.sin_port);
    }
    case AF_INET6:
      return Ipv6(reinterpret_cast<const sockaddr_in6&>(peer));
    case AF_UNIX:
      return Unix(fd);
  }
  return "";
}

}  // namespace colltest::server
