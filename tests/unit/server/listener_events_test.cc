// The listener tells its ListenerEvents how many connections are open and why it refused the
// others, each refusal under its own reason.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/unique_fd.h"
#include "gtest/gtest.h"
#include "server/net/listener.h"
#include "tests/unit/server/listener_test_support.h"

namespace colltest::server {
namespace {

using Refusal = ListenerEvents::Refusal;
using testing::Connect;
using testing::kPreface;
using testing::RecordedEvents;
using testing::Within;

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

  UniqueFd served = Connect(address, kPreface);
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
