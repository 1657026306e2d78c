// What the listener tests share: a ListenerEvents that records what it is told, a loopback client
// connection and a poll for what the listener's own thread does later.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "server/net/listener.h"
#include "common/unique_fd.h"

namespace colltest::server::testing {

// The HTTP/2 client connection preface: what a gRPC client sends first.
inline constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// Keeps the last open count and the sum of refusals per reason; the listener reports from its own
// thread, so every access is locked.
class RecordedEvents final : public ListenerEvents {
 public:
  void SetConnectionsOpen(size_t open) override {
    absl::MutexLock lock(&mu_);
    open_ = open;
  }
  void ObserveRefused(Refusal reason, uint64_t count) override {
    absl::MutexLock lock(&mu_);
    refused_[reason] += count;
  }
  size_t open() const {
    absl::MutexLock lock(&mu_);
    return open_;
  }
  uint64_t refused(Refusal reason) const {
    absl::MutexLock lock(&mu_);
    auto it = refused_.find(reason);
    return it == refused_.end() ? 0 : it->second;
  }

 private:
  mutable absl::Mutex mu_;
  size_t open_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<Refusal, uint64_t> refused_ ABSL_GUARDED_BY(mu_);
};

// True once `done` holds, false if it still does not after `limit`.
inline bool Within(std::chrono::milliseconds limit, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// A connection to the loopback listener at `address` ("host:port") that has sent `send_first`
// (nothing when empty). A `source` (a 127.x address) makes the connection come from there, so one
// test can play several peers.
inline UniqueFd Connect(const std::string& address, std::string_view send_first,
                        const std::string& source = "") {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!source.empty()) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    inet_pton(AF_INET, source.c_str(), &from.sin_addr);
    EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&from), sizeof(from)), 0);
  }
  EXPECT_EQ(connect(fd.get(), reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  if (!send_first.empty()) {
    EXPECT_EQ(send(fd.get(), send_first.data(), send_first.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(send_first.size()));
  }
  return fd;
}

}  // namespace colltest::server::testing
