#include "common/grpc_status.h"

#include "gtest/gtest.h"

namespace colltest::common {
namespace {

TEST(GrpcStatusTest, CodeAndMessageSurviveBothWays) {
  const absl::Status status = absl::FailedPreconditionError("group DEGRADED");
  const grpc::Status wire = ToGrpcStatus(status);
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(wire.error_message(), "group DEGRADED");
  EXPECT_EQ(FromGrpcStatus(wire), status);
}

TEST(GrpcStatusTest, EveryCodeKeepsItsNumber) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status status(static_cast<absl::StatusCode>(code), "m");
    EXPECT_EQ(static_cast<int>(ToGrpcStatus(status).error_code()), code);
    EXPECT_EQ(FromGrpcStatus(ToGrpcStatus(status)), status);
  }
}

TEST(GrpcStatusTest, OkIsOk) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
}

}  // namespace
}  // namespace colltest::common
