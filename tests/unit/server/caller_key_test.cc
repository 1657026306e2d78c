#include "server/net/caller_key.h"

#include "gtest/gtest.h"

namespace colltest::server {
namespace {

TEST(CallerKeyTest, APeerLosesItsPortSoThatReconnectingIsTheSameCaller) {
  EXPECT_EQ(CallerKey("peer:ipv4:127.0.0.1:41234"), "peer:ipv4:127.0.0.1");
  EXPECT_EQ(CallerKey("peer:ipv4:127.0.0.1:50000"), CallerKey("peer:ipv4:127.0.0.1:41234"));
  EXPECT_EQ(CallerKey("peer:ipv6:[::1]:41234"), "peer:ipv6:[::1]");
  EXPECT_EQ(CallerKey("peer:ipv6:[fe80::1]:8"), "peer:ipv6:[fe80::1]");
}

TEST(CallerKeyTest, OtherNamesAreKeptWhole) {
  EXPECT_EQ(CallerKey("ci"), "ci");
  EXPECT_EQ(CallerKey("cn:oncall.example.com"), "cn:oncall.example.com");
  EXPECT_EQ(CallerKey("peer:unix:uid=0,pid=42"), "peer:unix:uid=0,pid=42");
  EXPECT_EQ(CallerKey("peer:ipv6:[::1]"), "peer:ipv6:[::1]");
  EXPECT_EQ(CallerKey(""), "");
}

}  // namespace
}  // namespace colltest::server
