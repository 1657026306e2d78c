#include "server/health/health_rate_limit.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

using ::testing::HasSubstr;

class HealthRateLimitTest : public ::testing::Test {
 protected:
  HealthRateLimit Limit(uint32_t per_minute) {
    return HealthRateLimit(per_minute, [this] { return now_; });
  }
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
};

TEST_F(HealthRateLimitTest, ABurstOfTheRateThenOneCheckPerShareOfAMinute) {
  HealthRateLimit limit = Limit(6);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(limit.Take("alice").ok()) << i;
  const absl::Status refused = limit.Take("alice");
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("alice may start 6 health checks per minute"));
  EXPECT_THAT(refused.message(), HasSubstr("--health-rate-per-caller"));
  EXPECT_THAT(refused.message(), HasSubstr("retry in 10s"));
  now_ += absl::Seconds(9);
  EXPECT_THAT(limit.Take("alice").message(), HasSubstr("retry in 1s"));
  now_ += absl::Seconds(1);
  EXPECT_TRUE(limit.Take("alice").ok());
  EXPECT_FALSE(limit.Take("alice").ok());
}

TEST_F(HealthRateLimitTest, EachCallerHasItsOwnBucket) {
  HealthRateLimit limit = Limit(1);
  EXPECT_TRUE(limit.Take("alice").ok());
  EXPECT_FALSE(limit.Take("alice").ok());
  EXPECT_TRUE(limit.Take("bob").ok());
}

TEST_F(HealthRateLimitTest, AnIdleCallerGetsNoMoreThanTheBurst) {
  HealthRateLimit limit = Limit(2);
  EXPECT_TRUE(limit.Take("alice").ok());
  now_ += absl::Hours(1);
  EXPECT_TRUE(limit.Take("alice").ok());
  EXPECT_TRUE(limit.Take("alice").ok());
  EXPECT_FALSE(limit.Take("alice").ok());
}

TEST_F(HealthRateLimitTest, ManyCallersThatComeOnceLeaveNothingThatBlocks) {
  HealthRateLimit limit = Limit(1);
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(limit.Take("peer:ipv4:127.0.0." + std::to_string(i)).ok()) << i;
    now_ += absl::Seconds(1);
  }
  // The buckets that refilled were dropped; a recent caller is still counted.
  EXPECT_FALSE(limit.Take("peer:ipv4:127.0.0.4999").ok());
}

TEST_F(HealthRateLimitTest, ZeroIsNoLimit) {
  HealthRateLimit limit = Limit(0);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(limit.Take("alice").ok());
}

}  // namespace
}  // namespace colltest::server
