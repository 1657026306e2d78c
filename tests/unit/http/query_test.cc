#include "http/query.h"

#include "colltest/v1/colltest.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::http {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(QueryTest, ParsesAndDecodes) {
  const absl::StatusOr<QueryParams> params = ParseQuery("a=1&&b=x+y%2Fz&flag&c=");
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_THAT(*params,
              ElementsAre(Pair("a", "1"), Pair("b", "x y/z"), Pair("flag", ""), Pair("c", "")));
}

TEST(QueryTest, BadEscapeNamesTheParameter) {
  for (const char* query : {"label=%zz", "label=%4", "label=%"}) {
    const absl::StatusOr<QueryParams> params = ParseQuery(query);
    EXPECT_EQ(params.status().code(), absl::StatusCode::kInvalidArgument) << query;
    EXPECT_THAT(std::string(params.status().message()), HasSubstr("\"label\"")) << query;
  }
}

TEST(QueryTest, SetsScalarFieldsByType) {
  v1::ListRunsRequest runs;
  ASSERT_TRUE(ApplyQuery("limit=7&state=RUN_STATE_FAILED&since_unix_ms=-5&label=x", &runs).ok());
  EXPECT_EQ(runs.limit(), 7u);
  EXPECT_EQ(runs.state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(runs.since_unix_ms(), -5);
  EXPECT_EQ(runs.label(), "x");

  v1::HealthRequest health;
  ASSERT_TRUE(ApplyQuery("pairs=true&warn_ratio=2.5", &health).ok());
  EXPECT_TRUE(health.pairs());
  EXPECT_DOUBLE_EQ(health.warn_ratio(), 2.5);
}

TEST(QueryTest, ErrorsNameTheParameter) {
  struct Case {
    const char* query;
    const char* name;
  };
  for (const Case& c :
       {Case{"nope=1", "nope"}, Case{"limit=x", "limit"}, Case{"limit=4294967296", "limit"},
        Case{"limit=-1", "limit"}, Case{"state=3", "state"}, Case{"state=run_state_done", "state"},
        Case{"limit=1&limit=1", "limit"}}) {
    v1::ListRunsRequest request;
    const absl::Status status = ApplyQuery(c.query, &request);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.query;
    EXPECT_THAT(std::string(status.message()), HasSubstr(std::string("\"") + c.name + "\""))
        << c.query;
  }
  v1::HealthRequest health;
  EXPECT_THAT(std::string(ApplyQuery("devices=1", &health).message()), HasSubstr("repeated"));
  EXPECT_THAT(std::string(ApplyQuery("pairs=1", &health).message()), HasSubstr("\"pairs\""));
  v1::RunRequest run;
  EXPECT_THAT(std::string(ApplyQuery("spec=1", &run).message()), HasSubstr("message field"));
}

}  // namespace
}  // namespace colltest::http
