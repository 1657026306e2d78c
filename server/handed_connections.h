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
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <vector>

namespace colltest::server {

class HandedConnections {
 public:
  // Records `fd` (an open socket) before it is handed over; false if fstat fails.
  bool Add(int fd);
  // Forgets the connections that are closed; returns how many are still open.
  size_t Prune();
  size_t size() const { return open_.size(); }

 private:
  struct Entry {
    int fd;
    dev_t device;
    ino_t inode;
  };
  std::vector<Entry> open_;
};

}  // namespace colltest::server
