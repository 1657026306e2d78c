// The real peer of each connection colltestd's listener handed to gRPC. gRPC 1.51 names a
// connection it was handed by descriptor "fd:N" (ServerContext::peer()), which tells a log reader
// nothing, so the listener records the address it accepted and callers translate "fd:N" back.
//
// Entries are keyed by the descriptor number and checked against the socket's (device, inode),
// because numbers are reused: a lookup answers only while N is still the socket that was recorded
// (sockfs never reuses an inode while the process runs). gRPC closes a connection's descriptor
// when its transport is destroyed, which waits for the transport's last call, so during a call
// "fd:N" still refers to that call's connection. A reused number replaces its entry, so the table
// never holds more entries than the process has descriptor numbers.
//
// The table also records which connections have made an authenticated call (MarkProven, from
// Authorizer::Identify): the listener keeps those and may shut down the others (listener.h).
#pragma once

#include <sys/types.h>

#include <string>
#include <unordered_map>

#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace colltest::server {

class PeerNames {
 public:
  // Records `address` as the peer of `fd` (an open socket); false if fstat fails.
  bool Record(int fd, std::string address);
  // The recorded address when `grpc_peer` is "fd:N" and N is still the socket recorded for it;
  // otherwise `grpc_peer` unchanged.
  std::string Resolve(absl::string_view grpc_peer) const;
  // Marks the connection of `grpc_peer` ("fd:N", still the socket recorded) as having made an
  // authenticated call; any other peer is ignored.
  void MarkProven(absl::string_view grpc_peer);
  // Whether the socket (fd, device, inode) was recorded and marked proven.
  bool IsProven(int fd, dev_t device, ino_t inode) const;

 private:
  struct Entry {
    dev_t device;
    ino_t inode;
    std::string address;
    bool proven = false;
  };
  // N when `grpc_peer` is "fd:N" and N is still the socket recorded for it; else -1.
  int RecordedFd(absl::string_view grpc_peer) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  mutable absl::Mutex mu_;
  std::unordered_map<int, Entry> by_fd_ ABSL_GUARDED_BY(mu_);
};

// The process's table: descriptor numbers belong to the process, so one table serves every
// listener and every service in it.
PeerNames& HandedPeerNames();

// HandedPeerNames().Resolve(grpc_peer): how the server names a caller's connection.
std::string PeerAddress(absl::string_view grpc_peer);

// What a call that passed authentication calls: HandedPeerNames().MarkProven(grpc_peer).
void MarkCallAuthenticated(absl::string_view grpc_peer);

// The host part of a DescribePeer address, which per-peer limits count by: "127.0.0.1" for
// "ipv4:127.0.0.1:41234", "::1" for "ipv6:[::1]:41234"; "" for a unix socket or anything else.
std::string PeerHost(absl::string_view address);

// The peer of connected socket `fd` as gRPC's own listener would name it ("ipv4:127.0.0.1:41234",
// "ipv6:[::1]:41234"); a unix socket gives "unix:uid=U,pid=P" from the peer's credentials, since
// clients rarely bind a path. "" when getpeername fails.
std::string DescribePeer(int fd);

}  // namespace colltest::server
