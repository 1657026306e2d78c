#include "server/net/peer_names.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/unique_fd.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

struct Pair {
  UniqueFd a, b;
};

Pair SocketPair() {
  int fds[2] = {-1, -1};
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  return Pair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

uint16_t LocalPort(int fd) {
  sockaddr_storage local{};
  socklen_t size = sizeof(local);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size), 0);
  return local.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port)
                                    : ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port);
}

// A connected loopback TCP pair in `family`: {accepted (server side), client}. Invalid fds when
// the family has no loopback here.
Pair TcpPair(int family) {
  sockaddr_storage address{};
  socklen_t size = 0;
  if (family == AF_INET) {
    auto& v4 = reinterpret_cast<sockaddr_in&>(address);
    v4.sin_family = AF_INET;
    v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    size = sizeof(v4);
  } else {
    auto& v6 = reinterpret_cast<sockaddr_in6&>(address);
    v6.sin6_family = AF_INET6;
    v6.sin6_addr = in6addr_loopback;
    size = sizeof(v6);
  }
  UniqueFd listening(socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (bind(listening.get(), reinterpret_cast<sockaddr*>(&address), size) != 0 ||
      listen(listening.get(), 1) != 0 ||
      getsockname(listening.get(), reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    return {};
  }
  UniqueFd client(socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (connect(client.get(), reinterpret_cast<sockaddr*>(&address), size) != 0) return {};
  return Pair{UniqueFd(accept4(listening.get(), nullptr, nullptr, SOCK_CLOEXEC)),
              std::move(client)};
}

TEST(PeerNamesTest, NamesARecordedConnectionAndLeavesOtherPeersAlone) {
  PeerNames names;
  Pair pair = SocketPair();
  const std::string fd = absl::StrCat("fd:", pair.a.get());
  EXPECT_EQ(names.Resolve(fd), fd);  // not recorded
  ASSERT_TRUE(names.Record(pair.a.get(), "ipv4:127.0.0.1:41234"));
  EXPECT_EQ(names.Resolve(fd), "ipv4:127.0.0.1:41234");
  EXPECT_EQ(names.Resolve(absl::StrCat("fd:", pair.b.get())), absl::StrCat("fd:", pair.b.get()));
  for (const char* peer : {"ipv4:10.0.0.1:5", "unix:", "fd:", "fd:x", "fd:-1", "", "fd:99999"}) {
    EXPECT_EQ(names.Resolve(peer), peer);
  }
  EXPECT_FALSE(names.Record(-1, "nothing"));
}

// Descriptor numbers are reused: once the recorded socket is closed, whatever gets its number
// (another connection not yet recorded, a pipe) must not inherit the old peer's name.
TEST(PeerNamesTest, AReusedNumberDoesNotGiveAStaleName) {
  PeerNames names;
  Pair first = SocketPair();
  const int number = first.a.get();
  const std::string fd = absl::StrCat("fd:", number);
  ASSERT_TRUE(names.Record(number, "ipv4:127.0.0.1:1111"));
  first.a.reset();
  EXPECT_EQ(names.Resolve(fd), fd);  // closed

  Pair second = SocketPair();
  ASSERT_EQ(dup2(second.a.get(), number), number);  // `number` is now another socket
  UniqueFd reused(number);
  EXPECT_EQ(names.Resolve(fd), fd);
  ASSERT_TRUE(names.Record(number, "ipv4:127.0.0.1:2222"));
  EXPECT_EQ(names.Resolve(fd), "ipv4:127.0.0.1:2222");
}

TEST(PeerNamesTest, DescribesTcpPeersAsGrpcDoes) {
  Pair v4 = TcpPair(AF_INET);
  ASSERT_TRUE(v4.a.valid());
  EXPECT_EQ(DescribePeer(v4.a.get()), absl::StrCat("ipv4:127.0.0.1:", LocalPort(v4.b.get())));
  Pair v6 = TcpPair(AF_INET6);
  if (!v6.a.valid()) GTEST_SKIP() << "no IPv6 loopback";
  EXPECT_EQ(DescribePeer(v6.a.get()), absl::StrCat("ipv6:[::1]:", LocalPort(v6.b.get())));
}

TEST(PeerNamesTest, DescribesUnixPeersByTheirCredentials) {
  Pair pair = SocketPair();
  EXPECT_EQ(DescribePeer(pair.a.get()), absl::StrCat("unix:uid=", getuid(), ",pid=", getpid()));
  UniqueFd not_a_socket(open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(DescribePeer(not_a_socket.get()), "");
}

TEST(PeerNamesTest, TheProcessTableIsWhatPeerAddressReads) {
  Pair pair = SocketPair();
  const std::string fd = absl::StrCat("fd:", pair.a.get());
  ASSERT_TRUE(HandedPeerNames().Record(pair.a.get(), "unix:uid=1,pid=2"));
  EXPECT_EQ(PeerAddress(fd), "unix:uid=1,pid=2");
  EXPECT_EQ(PeerAddress("ipv4:127.0.0.1:5"), "ipv4:127.0.0.1:5");
}

// A connection is proven only by a mark on its own "fd:N" while N is still that socket, and the
// mark goes with the socket: a reused number starts unproven.
TEST(PeerNamesTest, MarkProvenHoldsForTheSocketItWasMadeFor) {
  PeerNames names;
  Pair pair = SocketPair();
  struct stat info {};
  ASSERT_EQ(fstat(pair.a.get(), &info), 0);
  ASSERT_TRUE(names.Record(pair.a.get(), "ipv4:127.0.0.1:41234"));
  EXPECT_FALSE(names.IsProven(pair.a.get(), info.st_dev, info.st_ino));
  names.MarkProven("ipv4:127.0.0.1:41234");  // not a handed connection's name: ignored
  EXPECT_FALSE(names.IsProven(pair.a.get(), info.st_dev, info.st_ino));
  names.MarkProven(absl::StrCat("fd:", pair.a.get()));
  EXPECT_TRUE(names.IsProven(pair.a.get(), info.st_dev, info.st_ino));
  EXPECT_FALSE(names.IsProven(pair.a.get(), info.st_dev, info.st_ino + 1));
  ASSERT_TRUE(names.Record(pair.a.get(), "ipv4:127.0.0.1:41235"));  // the number reused
  EXPECT_FALSE(names.IsProven(pair.a.get(), info.st_dev, info.st_ino));
}

TEST(PeerNamesTest, PeerHostDropsThePortAndKnowsNoUnixHost) {
  EXPECT_EQ(PeerHost("ipv4:127.0.0.2:41234"), "127.0.0.2");
  EXPECT_EQ(PeerHost("ipv6:[::1]:41234"), "::1");
  EXPECT_EQ(PeerHost("unix:uid=1000,pid=12"), "");
  EXPECT_EQ(PeerHost(""), "");
}

}  // namespace
}  // namespace colltest::server
