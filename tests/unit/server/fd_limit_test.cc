#include "server/net/fd_limit.h"

#include <sys/resource.h>

#include "gtest/gtest.h"

namespace colltest::server {
namespace {

TEST(FdLimitTest, RaisesTheSoftLimitToTheHardOne) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max <= 256)
    GTEST_SKIP() << "hard limit too low";
  rlimit lowered = saved;
  lowered.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  absl::StatusOr<FdLimits> limits = RaiseFdLimit();
  rlimit now{};
  getrlimit(RLIMIT_NOFILE, &now);
  setrlimit(RLIMIT_NOFILE, &saved);
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ(limits->soft_before, 256u);
  EXPECT_EQ(limits->soft, now.rlim_cur);
  EXPECT_GT(now.rlim_cur, 256u);
  if (saved.rlim_max != RLIM_INFINITY) {
    EXPECT_EQ(now.rlim_cur, saved.rlim_max);
  }
}

TEST(FdLimitTest, DefaultCapLeavesTheReserveAndHalfTheRest) {
  EXPECT_EQ(FdReserve(4), 96u);
  EXPECT_EQ(DefaultMaxConnections(256, 4), 80u);     // (256 - 96) / 2
  EXPECT_EQ(DefaultMaxConnections(1024, 4), 464u);   // (1024 - 96) / 2
  EXPECT_EQ(DefaultMaxConnections(1024, 64), 224u);  // (1024 - 576) / 2
  EXPECT_EQ(DefaultMaxConnections(20000, 8), 1024u);
  EXPECT_EQ(DefaultMaxConnections(64, 8), 16u);  // the floor: some clients must get in
}

}  // namespace
}  // namespace colltest::server
