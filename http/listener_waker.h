// Making CivetWeb stop at once. Its accept loop polls the listening socket in quanta of 2 s and
// sees the stop flag only between polls, so mg_stop would take up to 2 s; a connection to the port
// ends the poll early.
#pragma once

#include <atomic>
#include <string>
#include <thread>

namespace colltest::http {

// While alive, connects to HOST:PORT every 20 ms (and closes at once).
class ListenerWaker {
 public:
  // `host` as in the listening address: a name, an IPv4 address or a bracketed IPv6 one.
  ListenerWaker(std::string host, int port);
  ~ListenerWaker();
  ListenerWaker(const ListenerWaker&) = delete;
  ListenerWaker& operator=(const ListenerWaker&) = delete;

 private:
  void Run();

  std::string host_;
  int port_;
  std::atomic<bool> done_{false};
  std::thread thread_;  // last: starts after the members it reads
};

}  // namespace colltest::http
