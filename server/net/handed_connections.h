// The connections colltestd's listener has handed to gRPC, counted until gRPC closes them.
//
// gRPC 1.51 owns a descriptor once grpc::AddInsecureChannelFromFd has it and says nothing when it
// closes it (GOAWAY, keepalive failure, idle limit, the client leaving). The table therefore keeps
// each connection's (fd, device, inode) and asks the kernel with fstat whether that same socket is
// still open under that number: a closed fd fails with EBADF, and a number reused by anything else
// (a new connection, a worker's pipe) has another inode, since sockfs never reuses inodes while
// the process runs. This needs no hook in gRPC and no /proc scan; one fstat costs about 0.3 us,
// so a prune of the whole 1,024-entry table costs well under a millisecond. It runs when the cap
// is reached and once a second.
//
// A connection is "proven" once a call on it has passed authentication (PeerNames::MarkProven).
// An unproven one can be shut down (shutdown(2) on the descriptor gRPC owns, after the same fstat
// check): gRPC then reads EOF and closes it itself, within milliseconds.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/net/peer_names.h"

namespace colltest::server {

class HandedConnections {
 public:
  // Records `fd` (an open socket from `host`, "" for a unix socket, accepted at `accepted_at`)
  // before it is handed over; false if fstat fails.
  bool Add(int fd, std::string host, absl::Time accepted_at);
  // Forgets the connections that are closed; returns how many are still open.
  size_t Prune();
  size_t size() const { return open_.size(); }

  // Reads which connections have made an authenticated call since the last refresh.
  void RefreshProven(const PeerNames& names);
  // Shuts down the unproven connections accepted at or before `cutoff`; returns how many.
  size_t ShutDownUnprovenSince(absl::Time cutoff);
  // The acceptance time of the oldest unproven connection from `host` that is not shut down yet,
  // or InfiniteFuture when there is none.
  absl::Time OldestUnproven(absl::string_view host) const;
  // Shuts down the oldest unproven connection from `host` accepted at or before `cutoff`, asking
  // `names` first so that a connection proven since the last refresh is kept; false when there is
  // none.
  bool ShutDownOldestUnproven(absl::string_view host, absl::Time cutoff, const PeerNames& names);
  // Unproven connections from `host` that are not shut down yet.
  size_t UnprovenFrom(absl::string_view host) const;
  // Adds the unproven connections not shut down yet to `by_host`, per host.
  void CountUnproven(std::unordered_map<std::string, size_t>& by_host) const;
  // Connections shut down that gRPC has not closed yet.
  size_t shutting_down() const;

 private:
  struct Entry {
    int fd;
    dev_t device;
    ino_t inode;
    std::string host;
    absl::Time accepted_at;
    bool proven = false;
    bool shut_down = false;
  };
  static bool Evictable(const Entry& entry, absl::string_view host) {
    return !entry.proven && !entry.shut_down && entry.host == host;
  }
  static bool SameSocket(const Entry& entry);
  // shutdown(2) on the entry's socket if its number still names it; marks it shut down.
  static void ShutDown(Entry& entry);
  std::vector<Entry> open_;
};

}  // namespace colltest::server
