// The listener's protections against connections that speak HTTP/2 but never make an
// authenticated call (server/net/listener.h): the first-call timeout, the per-peer limit and the
// fair eviction at the cap, each leaving proven connections alone. The test stands in for gRPC (it
// keeps what it is handed) and for the service (it marks connections proven in its PeerNames).
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/unique_fd.h"
#include "gtest/gtest.h"
#include "server/net/listener.h"
#include "server/net/peer_names.h"
#include "tests/unit/server/listener_test_support.h"

namespace colltest::server {
namespace {

using Refusal = ListenerEvents::Refusal;
using std::chrono::milliseconds;
using testing::Connect;
using testing::kPreface;
using testing::RecordedEvents;
using testing::Within;

// A connection from `source` (a 127.x address) that has sent the preface.
UniqueFd ConnectFrom(const std::string& address, const std::string& source) {
  return Connect(address, kPreface, source);
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
  const RecordedEvents& events() const { return events_; }

 private:
  PeerNames names_;
  RecordedEvents events_;
  std::unique_ptr<Listener> listener_;
  mutable absl::Mutex mu_;
  std::vector<UniqueFd> handed_ ABSL_GUARDED_BY(mu_);
};

TEST(ListenerUnprovenTest, FirstCallTimeoutShutsDownOnlyUnprovenConnections) {
  ListenerOptions options;
  options.first_call_timeout = absl::Milliseconds(300);
  Served served(options);
  UniqueFd proven = ConnectFrom(served.address(), "127.0.0.1");
  ASSERT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 1; }));
  served.Prove(0);
  UniqueFd silent = ConnectFrom(served.address(), "127.0.0.1");
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
  for (int i = 0; i < 2; ++i) first.push_back(ConnectFrom(served.address(), "127.0.0.2"));
  ASSERT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 2; }));
  UniqueFd third = ConnectFrom(served.address(), "127.0.0.2");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return ClosedByServer(third); }));
  EXPECT_EQ(served.events().refused(Refusal::kPeerLimit), 1u);
  UniqueFd other = ConnectFrom(served.address(), "127.0.0.3");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 3; }));
  // A proven connection leaves the count: the address may open another.
  served.Prove(0);
  std::this_thread::sleep_for(milliseconds(1200));  // the listener refreshes once a second
  UniqueFd after_proof = ConnectFrom(served.address(), "127.0.0.2");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 4; }));
}

TEST(ListenerUnprovenTest, AtTheCapANewcomerEvictsFromTheHeaviestAddressNeverProven) {
  ListenerOptions options;
  options.max_connections = 3;
  options.eviction_grace = absl::Seconds(1);
  Served served(options);
  UniqueFd proven = ConnectFrom(served.address(), "127.0.0.1");
  ASSERT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 1; }));
  served.Prove(0);
  UniqueFd a1 = ConnectFrom(served.address(), "127.0.0.2");
  UniqueFd a2 = ConnectFrom(served.address(), "127.0.0.2");
  ASSERT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 3; }));
  // Within the grace nobody is evicted: the newcomer is refused.
  UniqueFd early = ConnectFrom(served.address(), "127.0.0.3");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return ClosedByServer(early); }));
  EXPECT_EQ(served.events().refused(Refusal::kCap), 1u);
  std::this_thread::sleep_for(milliseconds(1200));
  // Past it, a newcomer evicts the oldest connection of the address holding the most (a1).
  UniqueFd late = ConnectFrom(served.address(), "127.0.0.3");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return served.handed() == 4; }));
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return ClosedByServer(a1); }));
  EXPECT_EQ(served.events().refused(Refusal::kEvicted), 1u);
  // 127.0.0.2 and 127.0.0.3 now hold one each: a newcomer from 127.0.0.2 may not evict.
  UniqueFd a3 = ConnectFrom(served.address(), "127.0.0.2");
  EXPECT_TRUE(Within(milliseconds(5000), [&] { return ClosedByServer(a3); }));
  EXPECT_FALSE(ClosedByServer(proven));
  EXPECT_FALSE(ClosedByServer(a2));
  EXPECT_FALSE(ClosedByServer(late));
}

}  // namespace
}  // namespace colltest::server
