#include "server/net/handed_connections.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <utility>

namespace colltest::server {

bool HandedConnections::Add(int fd, std::string host, absl::Time accepted_at) {
  struct stat info {};
  if (fstat(fd, &info) != 0) return false;
  open_.push_back(Entry{fd, info.st_dev, info.st_ino, std::move(host), accepted_at});
  return true;
}

bool HandedConnections::SameSocket(const Entry& entry) {
  struct stat info {};
  return fstat(entry.fd, &info) == 0 && info.st_dev == entry.device && info.st_ino == entry.inode;
}

size_t HandedConnections::Prune() {
  std::erase_if(open_, [](const Entry& entry) { return !SameSocket(entry); });
  return open_.size();
}

void HandedConnections::RefreshProven(const PeerNames& names) {
  for (Entry& entry : open_) {
    if (!entry.proven) entry.proven = names.IsProven(entry.fd, entry.device, entry.inode);
  }
}

void HandedConnections::ShutDown(Entry& entry) {
  entry.shut_down = true;
  // Only while the number still names the socket that was handed over: a number gRPC closed and
  // the process reused (a new connection, a worker's pipe) is left alone. gRPC owns the
  // descriptor, so it is not closed here; gRPC reads EOF and closes it.
  if (SameSocket(entry)) shutdown(entry.fd, SHUT_RDWR);
}

size_t HandedConnections::ShutDownUnprovenSince(absl::Time cutoff) {
  size_t shut = 0;
  for (Entry& entry : open_) {
    if (!entry.proven && !entry.shut_down && entry.accepted_at <= cutoff) {
      ShutDown(entry);
      ++shut;
    }
  }
  return shut;
}

absl::Time HandedConnections::OldestUnproven(absl::string_view host) const {
  absl::Time oldest = absl::InfiniteFuture();
  for (const Entry& entry : open_) {
    if (Evictable(entry, host)) oldest = std::min(oldest, entry.accepted_at);
  }
  return oldest;
}

bool HandedConnections::ShutDownOldestUnproven(absl::string_view host, absl::Time cutoff,
                                               const PeerNames& names) {
  for (;;) {
    Entry* oldest = nullptr;
    for (Entry& entry : open_) {
      if (Evictable(entry, host) && entry.accepted_at <= cutoff &&
          (oldest == nullptr || entry.accepted_at < oldest->accepted_at)) {
        oldest = &entry;
      }
    }
    if (oldest == nullptr) return false;
    oldest->proven = names.IsProven(oldest->fd, oldest->device, oldest->inode);
    if (!oldest->proven) {
      ShutDown(*oldest);
      return true;
    }
  }
}

size_t HandedConnections::UnprovenFrom(absl::string_view host) const {
  return std::count_if(open_.begin(), open_.end(),
                       [host](const Entry& entry) { return Evictable(entry, host); });
}

void HandedConnections::CountUnproven(std::unordered_map<std::string, size_t>& by_host) const {
  for (const Entry& entry : open_) {
    if (!entry.proven && !entry.shut_down) ++by_host[entry.host];
  }
}

size_t HandedConnections::shutting_down() const {
  return std::count_if(open_.begin(), open_.end(),
                       [](const Entry& entry) { return entry.shut_down; });
}

}  // namespace colltest::server
