#include "common/status_macros.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace colltest::common {
namespace {

absl::StatusOr<int> Half(int value) {
  if (value % 2 != 0) return absl::InvalidArgumentError("odd");
  return value / 2;
}

absl::Status CheckEven(int value) { return Half(value).status(); }

// Counts how far it got, so that the tests see an early return.
absl::StatusOr<int> Quarter(int value, int& steps) {
  COLLTEST_ASSIGN_OR_RETURN(const int half, Half(value));
  ++steps;
  COLLTEST_ASSIGN_OR_RETURN(int quarter, Half(half));
  ++steps;
  return quarter;
}

absl::Status BothEven(int a, int b, int& steps) {
  COLLTEST_RETURN_IF_ERROR(CheckEven(a));
  ++steps;
  COLLTEST_RETURN_IF_ERROR(CheckEven(b));
  ++steps;
  return absl::OkStatus();
}

TEST(StatusMacrosTest, AssignOrReturnAssignsTheValue) {
  int steps = 0;
  EXPECT_EQ(*Quarter(8, steps), 2);
  EXPECT_EQ(steps, 2);
}

TEST(StatusMacrosTest, AssignOrReturnReturnsTheFirstError) {
  int steps = 0;
  const absl::StatusOr<int> q = Quarter(6, steps);  // 6 / 2 = 3 is odd
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(steps, 1);
}

TEST(StatusMacrosTest, ReturnIfErrorStopsAtTheFirstError) {
  int steps = 0;
  EXPECT_EQ(BothEven(3, 4, steps).message(), "odd");
  EXPECT_EQ(steps, 0);
  steps = 0;
  EXPECT_TRUE(BothEven(2, 4, steps).ok());
  EXPECT_EQ(steps, 2);
}

}  // namespace
}  // namespace colltest::common
