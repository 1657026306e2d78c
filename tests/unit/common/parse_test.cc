#include "common/parse.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::common {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ParseDurationTest, ReadsAbslDurations) {
  EXPECT_EQ(*ParseDuration("--timeout", "250ms"), absl::Milliseconds(250));
  EXPECT_EQ(*ParseDuration("--timeout", "2s"), absl::Seconds(2));
  EXPECT_EQ(*ParseDuration("--timeout", "1.5s"), absl::Milliseconds(1500));
  EXPECT_EQ(*ParseDuration("--timeout", "2m"), absl::Minutes(2));
  EXPECT_EQ(*ParseDuration("--timeout", "500us"), absl::Microseconds(500));
  EXPECT_EQ(*ParseDuration("--timeout", " 1m30s "), absl::Seconds(90));
}

TEST(ParseDurationTest, ReadsWholeDays) {
  EXPECT_EQ(*ParseDuration("--history-max-age", "90d"), absl::Hours(24 * 90));
  EXPECT_EQ(*ParseDuration("--since", "1d"), absl::Hours(24));
  EXPECT_FALSE(ParseDuration("--since", "1.5d").ok());
  EXPECT_FALSE(ParseDuration("--since", "d").ok());
  EXPECT_FALSE(ParseDuration("--since", "36501d").ok());
}

TEST(ParseDurationTest, ReadsABareNumberAsMilliseconds) {
  EXPECT_EQ(*ParseDuration("--timeout", "500"), absl::Milliseconds(500));
  EXPECT_EQ(*ParseDuration("--timeout", "0"), absl::ZeroDuration());
}

TEST(ParseDurationTest, RefusesNegativeInfiniteAndGarbageNamingTheFlag) {
  for (const char* text : {"-1s", "inf", "-inf", "5 s", "1.5", "s", "", "5parsecs"}) {
    const auto d = ParseDuration("--timeout", text);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(d.status().message()), StartsWith("--timeout: ")) << text;
  }
  EXPECT_THAT(std::string(ParseDuration("--timeout", "-1s").status().message()),
              HasSubstr("negative"));
}

TEST(ParseByteSizeTest, ReadsSuffixesAsPowersOf1024) {
  EXPECT_EQ(*ParseByteSize("--x", "4096"), 4096u);
  EXPECT_EQ(*ParseByteSize("--x", "512B"), 512u);
  EXPECT_EQ(*ParseByteSize("--x", "8k"), 8192u);
  EXPECT_EQ(*ParseByteSize("--x", "8K"), 8192u);
  EXPECT_EQ(*ParseByteSize("--x", "1M"), 1u << 20);
  EXPECT_EQ(*ParseByteSize("--x", "1Mi"), 1u << 20);
  EXPECT_EQ(*ParseByteSize("--x", "32MiB"), 32u << 20);
  EXPECT_EQ(*ParseByteSize("--x", "32mib"), 32u << 20);
  EXPECT_EQ(*ParseByteSize("--x", "2GB"), 2ull << 30);
  EXPECT_EQ(*ParseByteSize("--x", "3T"), 3ull << 40);
}

TEST(ParseByteSizeTest, RefusesOverflowAndValuesAboveTheLimit) {
  const auto overflow = ParseByteSize("--x", "16777216T");  // 2^24 * 2^40 = 2^64
  EXPECT_EQ(overflow.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(overflow.status().message()), HasSubstr("does not fit in 64 bits"));
  EXPECT_EQ(*ParseByteSize("--x", "16777215T"), 16777215ull << 40);
  EXPECT_FALSE(ParseByteSize("--x", "99999999999999999999").ok());
  EXPECT_EQ(ParseByteSize("--x", "2K", 1024).status().message(),
            "--x: '2K' is 2048, the limit is 1024");
}

TEST(ParseByteSizeTest, RefusesUnknownSuffixesNamingTheFlag) {
  for (const char* text : {"", "K", "8q", "8KiBB", "8 K", "-8", "1.5M", "8iB", "8KB2"}) {
    const auto v = ParseByteSize("--lamport-min-bytes", text);
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(v.status().message()), StartsWith("--lamport-min-bytes: cannot parse"))
        << text;
  }
}

TEST(ParseCountTest, ReadsSuffixesButNotABareB) {
  EXPECT_EQ(*ParseCount("--m", "8k"), 8192u);
  EXPECT_EQ(*ParseCount("--m", "64"), 64u);
  EXPECT_FALSE(ParseCount("--m", "64B").ok());
  EXPECT_EQ(ParseCount("--m", "8G", std::numeric_limits<uint32_t>::max()).status().message(),
            "--m: '8G' is 8589934592, the limit is 4294967295");
}

TEST(ParseListTest, ReadsPlainLists) {
  EXPECT_THAT(*ParseList("--m", "1,8,64"), ElementsAre(1, 8, 64));
  EXPECT_THAT(*ParseList("--m", " 1 , 8k "), ElementsAre(1, 8192));
}

TEST(ParseListTest, ExpandsRanges) {
  EXPECT_THAT(*ParseList("--m", "8..128"), ElementsAre(8, 16, 32, 64, 128));
  EXPECT_THAT(*ParseList("--m", "1..64"), ElementsAre(1, 2, 4, 8, 16, 32, 64));
  EXPECT_THAT(*ParseList("--m", "8..100"), ElementsAre(8, 16, 32, 64));
  EXPECT_THAT(*ParseList("--m", "8..128:x4"), ElementsAre(8, 32, 128));
  EXPECT_THAT(*ParseList("--m", "1..8:+1"), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_THAT(*ParseList("--m", "0..10:+5"), ElementsAre(0, 5, 10));
  EXPECT_THAT(*ParseList("--m", "1..3:+7"), ElementsAre(1));
  EXPECT_THAT(*ParseList("--m", "1K..4K"), ElementsAre(1024, 2048, 4096));
  EXPECT_THAT(*ParseList("--m", "7..7"), ElementsAre(7));
  EXPECT_THAT(*ParseList("--m", "1,4..16,3"), ElementsAre(1, 4, 8, 16, 3));
}

TEST(ParseListTest, StopsAtTheTopOfTheRangeWithoutOverflow) {
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(ParseList("--m", "1..16T:x1024")->size(), 5u);
  const std::string top = std::to_string(max);
  EXPECT_THAT(*ParseList("--m", top + ".." + top + ":+1"), ElementsAre(max));
  EXPECT_EQ(ParseList("--m", "1.." + top)->size(), 64u);
}

TEST(ParseListTest, BoundsTheExpansion) {
  EXPECT_EQ(ParseList("--m", "1..4096:+1")->size(), kMaxListValues);
  const auto huge = ParseList("--m", "1..100000:+1");
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(huge.status().message()), HasSubstr("--m: more than 4096 values"));
  EXPECT_FALSE(ParseList("--m", "1..4096:+1,5").ok());
}

TEST(ParseListTest, RefusesBadItemsAndRangesNamingTheFlag) {
  for (const char* text :
       {"", "1,,8", "1,", "8..", "..8", "128..8", "8..128:x1", "8..128:x", "1..8:+0", "1..8:-1",
        "0..8", "8..128:y2", "a..b", "1...8", "8..9..10"}) {
    const auto v = ParseList("--m", text);
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(v.status().message()), StartsWith("--m: ")) << text;
  }
  EXPECT_THAT(std::string(ParseList("--m", "128..8").status().message()),
              HasSubstr("runs backwards"));
  EXPECT_THAT(std::string(ParseList("--m", "0..8").status().message()),
              HasSubstr("cannot start at 0"));
  EXPECT_EQ(ParseList("--m", "1..8G", 1u << 20).status().message(),
            "--m: '8G' is 8589934592, the limit is 1048576");
}

TEST(ParseListTest, ReadsColonRangesAsNcclTestsWritesThem) {
  EXPECT_THAT(*ParseList("--m", "1:1024:x2"),
              ElementsAre(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024));
  EXPECT_THAT(*ParseList("--m", "8:128"), ElementsAre(8, 16, 32, 64, 128));
  EXPECT_THAT(*ParseList("--m", "8:128:x4"), ElementsAre(8, 32, 128));
  EXPECT_THAT(*ParseList("--m", "8:128:X4"), ElementsAre(8, 32, 128));
  EXPECT_THAT(*ParseList("--m", "1:8:+1"), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_THAT(*ParseList("--m", "0:10:+5"), ElementsAre(0, 5, 10));
  EXPECT_THAT(*ParseList("--m", "8:100"), ElementsAre(8, 16, 32, 64));
  EXPECT_THAT(*ParseList("--m", " 1K : 4K "), ElementsAre(1024, 2048, 4096));
  EXPECT_THAT(*ParseList("--m", "1,2:8:x4,3"), ElementsAre(1, 2, 8, 3));
  const std::vector<uint64_t> sizes = *ParseList("--bytes", "8K:128M:x2");
  ASSERT_EQ(sizes.size(), 15u);
  EXPECT_EQ(sizes.front(), 8192u);
  EXPECT_EQ(sizes.back(), uint64_t{128} << 20);
}

TEST(ParseListTest, ColonRangesAreRefusedNamingTheValue) {
  const auto backwards = ParseList("--m", "128:8");
  EXPECT_EQ(backwards.status().message(), "--m: range '128:8' runs backwards (128 > 8)");
  EXPECT_EQ(ParseList("--m", "1:8:x1").status().message(),
            "--m: range '1:8:x1': the factor 1 must be 2 or more");
  EXPECT_EQ(ParseList("--m", "1:8:x0").status().message(),
            "--m: range '1:8:x0': the factor 0 must be 2 or more");
  EXPECT_EQ(ParseList("--m", "1:8:+0").status().message(),
            "--m: range '1:8:+0': the step 0 must be 1 or more");
  EXPECT_THAT(std::string(ParseList("--m", "0:8").status().message()),
              HasSubstr("cannot start at 0"));
  EXPECT_EQ(ParseList("--m", "1:100000:+1").status().message(),
            "--m: more than 4096 values (range '1:100000:+1'), the limit is 4096");
  EXPECT_EQ(ParseList("--m", "1:4096:+1")->size(), kMaxListValues);
  for (const char* text :
       {"1:", ":8", "1:8:", "1:8:x2:3", "1:8:*2", "1:8:-1", "1:8:2", "a:b", "1::8", "1:8..16"}) {
    const auto v = ParseList("--m", text);
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(v.status().message()), StartsWith("--m: ")) << text;
  }
}

TEST(ParseByteSizeListTest, TakesByteSuffixesInValuesAndBounds) {
  EXPECT_THAT(*ParseByteSizeList("--bytes", "512B,32MiB"), ElementsAre(512, uint64_t{32} << 20));
  EXPECT_THAT(*ParseByteSizeList("--bytes", "512B:2KiB"), ElementsAre(512, 1024, 2048));
  EXPECT_THAT(*ParseByteSizeList("--bytes", "1KB..4KB:+1K"), ElementsAre(1024, 2048, 3072, 4096));
  // Counts have no bare B.
  EXPECT_FALSE(ParseList("--m", "512B:2K").ok());
  EXPECT_EQ(ParseByteSizeList("--bytes", "1K:8G", 1u << 20).status().message(),
            "--bytes: '8G' is 8589934592, the limit is 1048576");
}

TEST(ExpandListRangeTest, ExpandsAndRefusesAsParseListDoes) {
  EXPECT_THAT(*ExpandListRange("-b/-e/-f", "-b 8 -e 64", {.begin = 8, .end = 64}),
              ElementsAre(8, 16, 32, 64));
  EXPECT_THAT(*ExpandListRange("-b/-e/-f", "-b 8 -e 64", {.begin = 8, .end = 64, .factor = 8}),
              ElementsAre(8, 64));
  EXPECT_EQ(ExpandListRange("-f", "-f 1", {.begin = 8, .end = 64, .factor = 1}).status().message(),
            "-f: range '-f 1': the factor 1 must be 2 or more");
  EXPECT_FALSE(ExpandListRange("-e", "-e", {.begin = 64, .end = 8}).ok());
  EXPECT_FALSE(ExpandListRange("-b", "-b", {.begin = 1, .end = 1u << 20, .step = 1}).ok());
}

}  // namespace
}  // namespace colltest::common
