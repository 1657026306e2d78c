// The listener tells its ListenerEvents how many connections are open and why it refused the
// others, each refusal under its own reason.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "server/net/listener.h"
#include "server/net/unique_fd.h"

namespace colltest::server {
namespace {

using Refusal = ListenerEvents::Refusal;

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

bool Within(std::chrono::milliseconds limit, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

UniqueFd Connect(const std::string& address, const std::string& send_first) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(connect(fd.get(), reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  if (!send_first.empty()) {
    EXPECT_EQ(send(fd.get(), send_first.data(), send_first.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(send_first.size()));
  }
  return fd;
}

TEST(ListenerEventsTest, OpenConnectionsAndEachRefusalReasonAreReported) {
  RecordedEvents events;
  ListenerOptions options;
  options.max_connections = 2;
  options.handshake_timeout = absl::Milliseconds(200);
  options.events = &events;
  absl::StatusOr<std::unique_ptr<Listener>> listener = Listener::Bind("127.0.0.1:0", options);
  ASSERT_TRUE(listener.ok()) << listener.status();
  absl::Mutex mu;
  std::vector<UniqueFd> handed;  // stands in for gRPC: keeps what it is given open
  (*listener)->Start([&](int fd) {
    absl::MutexLock lock(&mu);
    handed.emplace_back(fd);
  });
  const std::string address = (*listener)->address();
  using std::chrono::milliseconds;

  UniqueFd served = Connect(address, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return events.open() == 1; }));
  UniqueFd http1 = Connect(address, "GET / HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(
      Within(milliseconds(5000), [&] { return events.refused(Refusal::kBadPreface) == 1; }));
  UniqueFd silent = Connect(address, "");
  EXPECT_TRUE(
      Within(milliseconds(5000), [&] { return events.refused(Refusal::kHandshakeTimeout) == 1; }));
  EXPECT_EQ(events.open(), 1u);

  UniqueFd waiting = Connect(address, "");  // the second and last slot
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return events.open() == 2; }));
  UniqueFd over = Connect(address, "");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return events.refused(Refusal::kCap) == 1; }));
  EXPECT_EQ(events.refused(Refusal::kAcceptError), 0u);
  (*listener)->Stop();
}

}  // namespace
}  // namespace colltest::server
