#include "http/json_codec.h"

#include "colltest/v1/colltest.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::http {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(JsonCodecTest, PrintsProtoNamesDefaultsAndOneLine) {
  v1::RunSummary run;
  run.set_run_id("r-1");
  run.set_created_unix_ms(1764547200000);
  run.add_variants(v1::VARIANT_LAMPORT);
  const std::string json = ToJson(run);
  EXPECT_THAT(json, HasSubstr("\"run_id\":\"r-1\""));
  EXPECT_THAT(json, HasSubstr("\"created_unix_ms\":\"1764547200000\""));
  EXPECT_THAT(json, HasSubstr("\"state\":\"RUN_STATE_UNSPECIFIED\""));
  EXPECT_THAT(json, HasSubstr("\"ok\":0"));
  EXPECT_THAT(json, HasSubstr("\"variants\":[\"VARIANT_LAMPORT\"]"));
  EXPECT_THAT(json, Not(HasSubstr("\n")));
}

TEST(JsonCodecTest, ParsesProtoAndJsonNamesAndNumbersForInt64) {
  v1::RunRequest request;
  ASSERT_TRUE(ParseJsonBody(R"({"spec": {"world_size": 2, "seed": 5, "variants": ["VARIANT_NCCL"],
                                 "noResidual": true}})",
                            &request)
                  .ok());
  EXPECT_EQ(request.spec().world_size(), 2u);
  EXPECT_EQ(request.spec().seed(), 5u);
  EXPECT_TRUE(request.spec().no_residual());
  EXPECT_EQ(request.spec().variants(0), v1::VARIANT_NCCL);
}

TEST(JsonCodecTest, EmptyBodyIsTheEmptyMessage) {
  v1::RunRequest request;
  request.mutable_spec()->set_world_size(3);
  EXPECT_TRUE(ParseJsonBody(" \n", &request).ok());
  EXPECT_FALSE(request.has_spec());
}

TEST(JsonCodecTest, ErrorsNameTheTypeAndTheField) {
  v1::RunRequest request;
  absl::Status status = ParseJsonBody("[1]", &request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), StartsWith("body: not a colltest.v1.RunRequest: "));
  status = ParseJsonBody(R"({"spec": {"wrold_size": 2}})", &request);
  EXPECT_THAT(std::string(status.message()), HasSubstr("wrold_size"));
  status = ParseJsonBody(R"({"spec": {"variants": ["VARIANT_NOPE"]}})", &request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace colltest::http
