#include "http/hangup_watch.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace colltest::http {
namespace {

struct DirCloser {
  void operator()(DIR* dir) const { closedir(dir); }
};

// The IPv4 address and port of a socket's end: getsockname or getpeername.
bool EndOf(int fd, int (*which)(int, sockaddr*, socklen_t*), std::string* address, uint16_t* port) {
  sockaddr_in end{};
  socklen_t size = sizeof(end);
  if (which(fd, reinterpret_cast<sockaddr*>(&end), &size) != 0 || end.sin_family != AF_INET) {
    return false;
  }
  char text[INET_ADDRSTRLEN] = {};
  if (inet_ntop(AF_INET, &end.sin_addr, text, sizeof(text)) == nullptr) return false;
  *address = text;
  *port = ntohs(end.sin_port);
  return true;
}

}  // namespace

int FindConnectionSocket(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  if (info == nullptr) return -1;
  const std::unique_ptr<DIR, DirCloser> fds(opendir("/proc/self/fd"));
  if (fds == nullptr) return -1;
  // A few hundred descriptors at most: well under a millisecond.
  while (const dirent* entry = readdir(fds.get())) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    std::string address;
    uint16_t port = 0;
    if (!EndOf(static_cast<int>(fd), getpeername, &address, &port) ||
        address != info->remote_addr || port != info->remote_port) {
      continue;
    }
    if (EndOf(static_cast<int>(fd), getsockname, &address, &port) && port == info->server_port) {
      return static_cast<int>(fd);
    }
  }
  return -1;
}

HangupWatch::HangupWatch(mg_connection* conn, grpc::ClientContext& context) : context_(context) {
  const int socket = FindConnectionSocket(conn);
  if (socket < 0) return;
  stop_event_ = eventfd(0, EFD_CLOEXEC);
  if (stop_event_ < 0) return;
  thread_ = std::thread([this, socket] { Watch(socket); });
}

HangupWatch::~HangupWatch() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_event_, &one, sizeof(one));
    thread_.join();
  }
  if (stop_event_ >= 0) close(stop_event_);
}

void HangupWatch::Watch(int socket) {
  // POLLRDHUP: the peer closed (FIN); POLLHUP/POLLERR (always reported): reset. Bytes the client
  // sends meanwhile (a pipelined request) are left for CivetWeb to read.
  pollfd watched[2] = {{socket, POLLRDHUP, 0}, {stop_event_, POLLIN, 0}};
  for (;;) {
    if (poll(watched, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (watched[1].revents != 0) return;
    if ((watched[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      client_gone_.store(true);
      context_.TryCancel();
      return;
    }
  }
}

}  // namespace colltest::http
