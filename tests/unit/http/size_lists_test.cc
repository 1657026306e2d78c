// POST /api/v1/sizes:parse: the list fields of a SweepSpec expanded in the CLI's grammar
// (common/parse.h), and refusals that name the field and the limit.
#include "http/size_lists.h"

#include "gateway_fixture.h"
#include "gmock/gmock.h"

namespace colltest::http::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ExpandSizeListsTest, ExpandsEachFieldInTheCliGrammar) {
  absl::StatusOr<std::string> reply =
      ExpandSizeLists(R"({"n": "1024, 4K", "m": "1:64:x4", "devices": "0..3:+1"})");
  ASSERT_TRUE(reply.ok()) << reply.status();
  // In name order, as JSON numbers.
  EXPECT_EQ(*reply, R"({"devices":[0,1,2,3],"m":[1,4,16,64],"n":[1024,4096]})");
  EXPECT_EQ(*ExpandSizeLists(R"({"m": "8..128:x4,1000"})"), R"({"m":[8,32,128,1000]})");
  EXPECT_EQ(*ExpandSizeLists(""), "{}");
}

TEST(ExpandSizeListsTest, RefusalsNameTheFieldAndTheLimit) {
  struct Case {
    const char* body;
    const char* message_start;
    const char* detail;
  };
  for (const Case& c : {
           Case{R"({"m": "1:100000:+1"})", "m: more than 4096 values", "the limit is 4096"},
           Case{R"({"n": "5G"})", "n: '5G' is 5368709120", "the limit is 4294967295"},
           Case{R"({"m": "1:64:x1"})", "m: range '1:64:x1'", "must be 2 or more"},
           Case{R"({"n": "8q"})", "n: cannot parse '8q'", "a count such as 64"},
           Case{R"({"m": ""})", "m: cannot parse ''", "comma-separated list"},
           Case{R"({"m": [1, 4]})", "m: expected the list as a string", "1:64:x4"},
           Case{R"({"label": "x"})", "label: not a list field", "(m, n, devices)"},
           Case{R"({"world_size": "2"})", "world_size: not a list field", "(m, n, devices)"},
           Case{"[1]", "body: not a google.protobuf.Struct", ""},
       }) {
    const absl::StatusOr<std::string> reply = ExpandSizeLists(c.body);
    ASSERT_FALSE(reply.ok()) << c.body << " gave " << *reply;
    EXPECT_EQ(reply.status().code(), absl::StatusCode::kInvalidArgument) << c.body;
    const std::string message(reply.status().message());
    EXPECT_THAT(message, StartsWith(c.message_start)) << c.body;
    EXPECT_THAT(message, HasSubstr(c.detail)) << c.body;
  }
}

class ParseSizesApiTest : public GatewayTest {
 protected:
  void SetUp() override { StartGateway(Options()); }
};

TEST_F(ParseSizesApiTest, AnswersTheExpandedLists) {
  const HttpResponse response =
      Post(address(), "/api/v1/sizes:parse", R"({"m": "1:64:x4", "n": "1024"})");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.Header("content-type"), "application/json");
  EXPECT_EQ(response.body, "{\"m\":[1,4,16,64],\"n\":[1024]}\n");
}

TEST_F(ParseSizesApiTest, ARefusedFieldIs400WithTheGrammarsMessage) {
  const HttpResponse response = Post(address(), "/api/v1/sizes:parse", R"({"m": "1:100000:+1"})");
  EXPECT_EQ(response.status, 400) << response.body;
  EXPECT_EQ(ErrorCode(response), "INVALID_ARGUMENT");
  EXPECT_EQ(ErrorMessage(response),
            "m: more than 4096 values (range '1:100000:+1'), the limit is 4096");
}

TEST_F(ParseSizesApiTest, TakesOnlyPostWithJson) {
  HttpResponse response = Get(address(), "/api/v1/sizes:parse");
  EXPECT_EQ(response.status, 405) << response.body;
  EXPECT_EQ(response.Header("allow"), "POST");
  response =
      Post(address(), "/api/v1/sizes:parse", R"({"m": "1"})", {{"Content-Type", "text/plain"}});
  EXPECT_EQ(response.status, 415) << response.body;
}

}  // namespace
}  // namespace colltest::http::testing
