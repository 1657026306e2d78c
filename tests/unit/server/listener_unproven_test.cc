// The listener's protections against connections that speak HTTP/2 but never make an
// authenticated call (server/net/listener.h): the first-call timeout, the per-peer limit and the
// fair eviction at the cap, each leaving proven connections alone. The test stands in for gRPC (it
// keeps what it is handed) and for the service (it marks connections proven in its PeerNames).
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

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "server/net/listener.h"
#include "server/net/peer_names.h"
#include "server/net/unique_fd.h"

namespace colltest::server {
namespace {

using Refusal = ListenerEvents::Refusal;
using std::chrono::milliseconds;

constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

class CountedRefusals final : public ListenerEvents {
 public:
  void SetConnectionsOpen(size_t) override {}
  void ObserveRefused(Refusal reason, uint64_t count) override {
    absl::MutexLock lock(&mu_);
    refused_[reason] += count;
  }
  uint64_t refused(Refusal reason) const {
    absl::MutexLock lock(&mu_);
    auto it = refused_.find(reason);
    return it == refused_.end() ? 0 : it->second;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<Refusal, uint64_t> refused_ ABSL_GUARDED_BY(mu_);
};

bool Within(milliseconds limit, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

// A connection from `source` (a 127.x address) that has sent the preface.
UniqueFd Connect(const std::string& address, const char* source) {
  sockaddr_in from{}, to{};
  from.sin_family = to.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&from), sizeof(from)), 0);
  EXPECT_EQ(connect(fd.get(), reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  EXPECT_EQ(send(fd.get(), kPreface, sizeof(kPreface) - 1, MSG_NOSIGNAL),
            static_cast<ssize_t>(sizeof(kPreface) - 1));
  return fd;
}

// True once the server has closed or shut down the connection.
bool ClosedByServer(const UniqueFd& fd) {
  char byte;
  const ssize_t got = recv(fd.get(), &byte, 1, MSG_DONTWAIT);
  return got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// A listener whose handed connections the test keeps, in the order handed.
class Served {
 public:
  explicit Served(ListenerOptions options) {
    options.peer_names = &names_;
    options.events = &events_;
    auto listener = Listener::Bind("127.0.0.1:0", options);
    EXPECT_TRUE(listener.ok()) << listener.status();
    listener_ = *std::move(listener);
    listener_->Start([this](int fd) {
      absl::MutexLock lock(&mu_);
      handed_.emplace_back(fd);
    });
  }
  ~Served() { listener_->Stop(); }
  const std::string& address() const { return listener_->address(); }
  size_t handed() const {
    absl::MutexLock lock(&mu_);
    return handed_.size();
  }
  // What the service does after a call on the i-th handed connection passed authentication.
  void Prove(size_t i) {
    absl::MutexLock lock(&mu_);
    names_.MarkProven(absl::StrCat("fd:", handed_.at(i).get()));
  }
  const CountedRefusals& events() const { return events_; }

 private:
  PeerNames names_;
  CountedRefusals events_;
  std::unique_ptr<Listener> listener_;
  mutable absl::Mutex mu_;
  std::vector<UniqueFd> handed_ ABSL_GUARDED_BY(mu_);
};

TEST(ListenerUnprovenTest, FirstCallTimeoutShutsDownOnlyUnprovenConnections) {
  ListenerOptions options;
  options.first_call_timeout = absl::Milliseconds(300);
  Served served(options);
  UniqueFd proven = Connect(served.address(), "127.0.0.1");
  ASSERT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 1; }));
  served.Prove(0);
  UniqueFd silent = Connect(served.address(), "127.0.0.1");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return ClosedByServer(silent); }));
  EXPECT_EQ(served.events().refused(Refusal::kFirstCallTimeout), 1u);
  std::this_thread::sleep_for(milliseconds(1200));  // a prune or more later
  EXPECT_FALSE(ClosedByServer(proven));
}

TEST(ListenerUnprovenTest, PerPeerLimitRefusesOnlyThatAddress) {
  ListenerOptions options;
  options.max_unproven_per_peer = 2;
  Served served(options);  // no eviction: the grace is infinite
  std::vector<UniqueFd> first;
  for (int i = 0; i < 2; ++i) first.push_back(Connect(served.address(), "127.0.0.2"));
  ASSERT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 2; }));
  UniqueFd third = Connect(served.address(), "127.0.0.2");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return ClosedByServer(third); }));
  EXPECT_EQ(served.events().refused(Refusal::kPeerLimit), 1u);
  UniqueFd other = Connect(served.address(), "127.0.0.3");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 3; }));
  // A proven connection leaves the count: the address may open another.
  served.Prove(0);
  std::this_thread::sleep_for(milliseconds(1200));  // the listener refreshes once a second
  UniqueFd after_proof = Connect(served.address(), "127.0.0.2");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 4; }));
}

TEST(ListenerUnprovenTest, AtTheCapANewcomerEvictsFromTheHeaviestAddressNeverProven) {
  ListenerOptions options;
  options.max_connections = 3;
  options.eviction_grace = absl::Seconds(1);
  Served served(options);
  UniqueFd proven = Connect(served.address(), "127.0.0.1");
  ASSERT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 1; }));
  served.Prove(0);
  UniqueFd a1 = Connect(served.address(), "127.0.0.2");
  UniqueFd a2 = Connect(served.address(), "127.0.0.2");
  ASSERT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 3; }));
  // Within the grace nobody is evicted: the newcomer is refused.
  UniqueFd early = Connect(served.address(), "127.0.0.3");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return ClosedByServer(early); }));
  EXPECT_EQ(served.events().refused(Refusal::kCap), 1u);
  std::this_thread::sleep_for(milliseconds(1200));
  // Past it, a newcomer evicts the oldest connection of the address holding the most (a1).
  UniqueFd late = Connect(served.address(), "127.0.0.3");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 4; }));
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return ClosedByServer(a1); }));
  EXPECT_EQ(served.events().refused(Refusal::kEvicted), 1u);
  // 127.0.0.2 and 127.0.0.3 now hold one each: a newcomer from 127.0.0.2 may not evict.
  UniqueFd a3 = Connect(served.address(), "127.0.0.2");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return ClosedByServer(a3); }));
  EXPECT_FALSE(ClosedByServer(proven));
  EXPECT_FALSE(ClosedByServer(a2));
  EXPECT_FALSE(ClosedByServer(late));
}

}  // namespace
}  // namespace colltest::server
