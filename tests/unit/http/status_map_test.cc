#include "http/status_map.h"

#include "common/grpc_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::http {
namespace {

TEST(StatusMapTest, TheDocumentedTable) {
  using C = absl::StatusCode;
  EXPECT_EQ(HttpStatusFor(C::kOk), 200);
  EXPECT_EQ(HttpStatusFor(C::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusFor(C::kOutOfRange), 400);
  EXPECT_EQ(HttpStatusFor(C::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatusFor(C::kPermissionDenied), 403);
  EXPECT_EQ(HttpStatusFor(C::kNotFound), 404);
  EXPECT_EQ(HttpStatusFor(C::kAlreadyExists), 409);
  EXPECT_EQ(HttpStatusFor(C::kAborted), 409);
  EXPECT_EQ(HttpStatusFor(C::kFailedPrecondition), 409);
  EXPECT_EQ(HttpStatusFor(C::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatusFor(C::kCancelled), 499);
  EXPECT_EQ(HttpStatusFor(C::kUnavailable), 503);
  EXPECT_EQ(HttpStatusFor(C::kDeadlineExceeded), 504);
  EXPECT_EQ(HttpStatusFor(C::kUnimplemented), 501);
  EXPECT_EQ(HttpStatusFor(C::kInternal), 500);
  EXPECT_EQ(HttpStatusFor(C::kDataLoss), 500);
  EXPECT_EQ(HttpStatusFor(C::kUnknown), 500);
}

TEST(StatusMapTest, GrpcCodesKeepTheirNumbers) {
  const absl::Status status =
      common::FromGrpcStatus(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "group DEGRADED"));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "group DEGRADED");
  EXPECT_EQ(HttpStatusOf(status), 409);
}

TEST(StatusMapTest, AnExplicitHttpStatusWins) {
  const absl::Status status = WithHttpStatus(absl::ResourceExhaustedError("too big"), 413);
  EXPECT_EQ(HttpStatusOf(status), 413);
  EXPECT_EQ(HttpStatusOf(absl::ResourceExhaustedError("quota")), 429);
}

TEST(StatusMapTest, ErrorJsonEscapes) {
  EXPECT_EQ(ErrorJson(absl::InvalidArgumentError("label \"a\\b\"\n\x01")),
            R"({"code":"INVALID_ARGUMENT","message":"label \"a\\b\"\n\u0001"})");
  EXPECT_EQ(ErrorJson(absl::NotFoundError("r\xc3\xa9sum\xc3\xa9")),
            "{\"code\":\"NOT_FOUND\",\"message\":\"r\xc3\xa9sum\xc3\xa9\"}");
}

// A message may quote bytes a client sent: the body stays valid JSON, bytes that are not UTF-8
// becoming U+FFFD.
TEST(StatusMapTest, ErrorJsonReplacesBytesThatAreNotUtf8) {
  EXPECT_EQ(ErrorJson(absl::InvalidArgumentError("bad \xff")),
            "{\"code\":\"INVALID_ARGUMENT\",\"message\":\"bad \xef\xbf\xbd\"}");
}

}  // namespace
}  // namespace colltest::http
