// The worker's translation of the wire's Pattern (worker/case_config.h): every pattern a request
// can name reaches the host pattern of the same name, so no pattern silently runs as `normal`.
#include <optional>
#include <string>

#include "common/names.h"
#include "gtest/gtest.h"
#include "worker/case_config.h"
#include "worker/numerics/input_hash.h"

namespace colltest::worker {
namespace {

TEST(ToPattern, EveryPatternReachesTheHostPatternOfItsName) {
  for (const std::string& name : common::PatternNames()) {
    const std::optional<colltest::v1::Pattern> p = common::ParsePatternName(name);
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_EQ(PatternName(ToPattern(*p)), name);
  }
  EXPECT_EQ(ToPattern(colltest::v1::PATTERN_UNSPECIFIED), Pattern::kNormal);
}

}  // namespace
}  // namespace colltest::worker
