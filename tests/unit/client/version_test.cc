// `colltest --version`: the version, the commit it was built from and the build type.
#include "common/version.h"

#include <sstream>
#include <string>
#include <variant>

#include "client/cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

TEST(VersionTest, PrintsVersionCommitAndBuildType) {
  std::ostringstream out, err;
  std::variant<Invocation, int> result = ParseCommandLine({"colltest", "--version"}, out, err);
  ASSERT_TRUE(std::holds_alternative<int>(result));
  EXPECT_EQ(std::get<int>(result), 0);
  EXPECT_THAT(out.str(),
              ::testing::MatchesRegex("colltest [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit "
                                      "([0-9a-f]{7,}(-dirty)?|unknown), [A-Za-z]+\\)\n"));
  EXPECT_EQ(out.str(), common::VersionLine("colltest") + "\n");
}

TEST(VersionTest, LineNamesTheProgram) {
  EXPECT_EQ(common::VersionLine("colltestd"), std::string("colltestd ") + common::Version() +
                                                  " (commit " + common::BuildCommit() + ", " +
                                                  common::BuildType() + ")");
  EXPECT_STRNE(common::BuildCommit(), "");
  EXPECT_STRNE(common::BuildType(), "");
}

}  // namespace
}  // namespace colltest::client
