#include "http/read_deadline.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace colltest::http {

ReadDeadlines::ReadDeadlines() : thread_([this] { Run(); }) {}

ReadDeadlines::~ReadDeadlines() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    changed_.Signal();
  }
  thread_.join();
}

ReadDeadlines::Watch::Watch(ReadDeadlines* deadlines, int fd, absl::Time deadline)
    : deadlines_(deadlines) {
  absl::MutexLock lock(&deadlines_->mu_);
  id_ = deadlines_->next_id_++;
  deadlines_->entries_.emplace(id_, Entry{fd, deadline});
  deadlines_->changed_.Signal();
}

ReadDeadlines::Watch::~Watch() {
  // Under the lock: once erased, the watchdog cannot shut `fd`, which the connection may close and
  // the process reuse as soon as the handler returns.
  absl::MutexLock lock(&deadlines_->mu_);
  deadlines_->entries_.erase(id_);
}

bool ReadDeadlines::Watch::expired() const {
  absl::MutexLock lock(&deadlines_->mu_);
  auto found = deadlines_->entries_.find(id_);
  return found != deadlines_->entries_.end() && found->second.expired;
}

absl::Time ReadDeadlines::ExpireDue(absl::Time now) {
  absl::Time earliest = absl::InfiniteFuture();
  for (auto& [id, entry] : entries_) {
    if (entry.expired) continue;
    if (entry.deadline <= now) {
      shutdown(entry.fd, SHUT_RD);
      entry.expired = true;
    } else if (entry.deadline < earliest) {
      earliest = entry.deadline;
    }
  }
  return earliest;
}

void ReadDeadlines::Run() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    const absl::Time next = ExpireDue(absl::Now());
    // Woken by a new entry (which may be due earlier) or by the stop.
    changed_.WaitWithDeadline(&mu_, next);
  }
}

namespace {

struct DirCloser {
  void operator()(DIR* dir) const { closedir(dir); }
};

// The port and address text (as inet_ntop writes it) of an IPv4 or IPv6 socket address.
bool PortAndAddress(const sockaddr_storage& address, int* port, std::string* text) {
  char buffer[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    *port = ntohs(v4.sin_port);
    inet_ntop(AF_INET, &v4.sin_addr, buffer, sizeof(buffer));
  } else if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    *port = ntohs(v6.sin6_port);
    inet_ntop(AF_INET6, &v6.sin6_addr, buffer, sizeof(buffer));
  } else {
    return false;
  }
  *text = buffer;
  return true;
}

// Whether `fd` is a TCP connection from `remote_address`:`remote_port` to local port `local_port`.
bool IsConnection(int fd, int local_port, const std::string& remote_address, int remote_port) {
  sockaddr_storage address{};
  socklen_t size = sizeof(address);
  int port = 0;
  std::string text;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) return false;
  if (!PortAndAddress(address, &port, &text) || port != remote_port || text != remote_address) {
    return false;
  }
  size = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) return false;
  return PortAndAddress(address, &port, &text) && port == local_port;
}

}  // namespace

absl::StatusOr<int> ConnectionSocket(const mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  const std::string remote_address = info->remote_addr;
  std::unique_ptr<DIR, DirCloser> dir(opendir("/proc/self/fd"));
  if (dir == nullptr) return absl::NotFoundError("/proc/self/fd: cannot be listed");
  while (const dirent* entry = readdir(dir.get())) {
    int fd = -1;
    if (!absl::SimpleAtoi(entry->d_name, &fd) || fd == dirfd(dir.get())) continue;
    if (IsConnection(fd, info->server_port, remote_address, info->remote_port)) return fd;
  }
  return absl::NotFoundError(absl::StrCat("no socket from ", remote_address, ":", info->remote_port,
                                          " to port ", info->server_port));
}

}  // namespace colltest::http
