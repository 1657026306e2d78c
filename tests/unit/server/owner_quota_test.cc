#include "server/runs/owner_quota.h"

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

using ::testing::HasSubstr;

// With authentication off a caller is "peer:ipv4:A:PORT" and `colltest` opens one connection per
// call: counted by port, one client held as many slots as it opened connections.
TEST(OwnerQuotaTest, CountsPeerAddressesWithoutThePort) {
  constexpr uint32_t kLimit = 4;
  constexpr int kAttempts = 40;
  OwnerQuota quota(kLimit);
  std::vector<OwnerQuota::Slot> held;
  std::optional<absl::Status> refusal;
  for (int i = 0; i < kAttempts; ++i) {
    absl::StatusOr<OwnerQuota::Slot> slot =
        quota.Take(absl::StrCat("peer:ipv4:127.0.0.1:", 40000 + i));
    if (!slot.ok()) {
      refusal = slot.status();
      continue;
    }
    held.push_back(*std::move(slot));
  }
  std::cout << kAttempts << " runs from 127.0.0.1 on " << kAttempts << " ports: " << held.size()
            << " admitted under a limit of " << kLimit << "\n";
  EXPECT_EQ(held.size(), kLimit);
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refusal->message()),
              HasSubstr("peer:ipv4:127.0.0.1 has 4 runs queued or running, the limit is 4"));
  EXPECT_EQ(quota.active("peer:ipv4:127.0.0.1:1"), kLimit);

  // Another host, an IPv6 peer and a named caller have slots of their own.
  EXPECT_TRUE(quota.Take("peer:ipv4:127.0.0.2:40000").ok());
  EXPECT_TRUE(quota.Take("peer:ipv6:[::1]:40000").ok());
  EXPECT_TRUE(quota.Take("ci-a").ok());

  held.clear();  // every slot given back
  EXPECT_EQ(quota.active("peer:ipv4:127.0.0.1:40000"), 0u);
  EXPECT_TRUE(quota.Take("peer:ipv4:127.0.0.1:50000").ok());
}

TEST(OwnerQuotaTest, NamedCallersAreCountedByName) {
  OwnerQuota quota(1);
  absl::StatusOr<OwnerQuota::Slot> first = quota.Take("ci-a");
  ASSERT_TRUE(first.ok());
  EXPECT_THAT(std::string(quota.Take("ci-a").status().message()),
              HasSubstr("ci-a has 1 runs queued or running, the limit is 1 "
                        "(colltestd --max-active-runs-per-owner)"));
  EXPECT_TRUE(quota.Take("ci-b").ok());
}

}  // namespace
}  // namespace colltest::server
