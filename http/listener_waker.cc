#include "http/listener_waker.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace colltest::http {
namespace {

// One non-blocking connect to the first address of host:port: it cannot hang on a full backlog.
void Poke(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), absl::StrCat(port).c_str(), &hints, &found) != 0) return;
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> owned(found, &freeaddrinfo);
  const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  // A wildcard address (0.0.0.0, ::) reaches the local host on Linux.
  connect(fd, found->ai_addr, found->ai_addrlen);
  close(fd);
}

}  // namespace

ListenerWaker::ListenerWaker(std::string host, int port)
    : host_(absl::StripSuffix(absl::StripPrefix(host, "["), "]")),
      port_(port),
      thread_([this] { Run(); }) {}

ListenerWaker::~ListenerWaker() {
  done_ = true;
  thread_.join();
}

void ListenerWaker::Run() {
  // The first poke after mg_stop raised its flag, so the connection is not served as a request.
  while (!done_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!done_) Poke(host_, port_);
  }
}

}  // namespace colltest::http
