#include "server/handed_connections.h"

#include <sys/stat.h>

#include <algorithm>

namespace colltest::server {

bool HandedConnections::Add(int fd) {
  struct stat info {};
  if (fstat(fd, &info) != 0) return false;
  open_.push_back(Entry{fd, info.st_dev, info.st_ino});
  return true;
}

size_t HandedConnections::Prune() {
  std::erase_if(open_, [](const Entry& entry) {
    struct stat info {};
    return fstat(entry.fd, &info) != 0 || info.st_dev != entry.device || info.st_ino != entry.inode;
  });
  return open_.size();
}

}  // namespace colltest::server
