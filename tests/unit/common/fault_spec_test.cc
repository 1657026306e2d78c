#include "common/fault_spec.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::common {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ParseFaultSpecTest, EmptyIsNoFault) {
  EXPECT_EQ(ParseFaultSpec("spec.fault", "", 4)->kind, FaultKind::kNone);
}

TEST(ParseFaultSpecTest, ReadsEveryKind) {
  struct Case {
    const char* text;
    FaultKind kind;
    int rank;
    uint32_t delay_us;
  };
  for (const Case& c :
       {Case{"missing_rank:3", FaultKind::kMissingRank, 3, 0},
        Case{"delay_rank:1:3000000", FaultKind::kDelayRank, 1, 3000000},
        Case{"delay_rank:0:60000000", FaultKind::kDelayRank, 0, 60000000},
        Case{"skip_rearm", FaultKind::kSkipRearm, -1, 0},
        Case{"poison_staging", FaultKind::kPoisonStaging, -1, 0},
        Case{"skip_canonicalize", FaultKind::kSkipCanonicalize, -1, 0},
        Case{"crash_rank:0", FaultKind::kCrashRank, 0, 0},
        Case{"hang_end_sync:2", FaultKind::kHangEndSync, 2, 0},
        Case{"stall_rank:3", FaultKind::kStallRank, 3, 0},
        Case{"quant_amax_before_last_rank", FaultKind::kQuantAmaxBeforeLastRank, -1, 0},
        Case{"quant_truncate", FaultKind::kQuantTruncate, -1, 0},
        Case{"quant_no_saturation", FaultKind::kQuantNoSaturation, -1, 0},
        Case{"quant_swap_format", FaultKind::kQuantSwapFormat, -1, 0},
        Case{"quant_block_offset", FaultKind::kQuantBlockOffset, -1, 0}}) {
    const absl::StatusOr<FaultSpec> f = ParseFaultSpec("spec.fault", c.text, 4);
    ASSERT_TRUE(f.ok()) << c.text << ": " << f.status();
    EXPECT_EQ(f->kind, c.kind) << c.text;
    EXPECT_EQ(f->rank, c.rank) << c.text;
    EXPECT_EQ(f->delay_us, c.delay_us) << c.text;
    EXPECT_EQ(FormatFaultSpec(*f), c.text);
  }
}

// A fault with a rank is aimed at that rank alone; one without, at every rank.
TEST(ParseFaultSpecTest, TargetsItsRankOrEveryRank) {
  const absl::StatusOr<FaultSpec> one = ParseFaultSpec("spec.fault", "crash_rank:2", 4);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(one->Targets(2));
  EXPECT_FALSE(one->Targets(0));
  EXPECT_FALSE(one->Targets(3));
  const absl::StatusOr<FaultSpec> all = ParseFaultSpec("spec.fault", "skip_rearm", 4);
  ASSERT_TRUE(all.ok()) << all.status();
  for (uint32_t r = 0; r < 4; ++r) EXPECT_TRUE(all->Targets(r)) << r;
}

TEST(ParseFaultSpecTest, RefusesMalformedFaultsNamingTheFieldAndListingTheGrammar) {
  for (const char* text :
       {"foo", "missing_rank:9", "missing_rank:4", "missing_rank:-1", "missing_rank:+1",
        "missing_rank: 1", "missing_rank", "missing_rank:", "delay_rank:0:abc", "delay_rank:0",
        "delay_rank:0:60000001", "delay_rank:0:-5", "crash_rank:0:extra", "skip_rearm:1",
        "stall_rank:99999999999", ":", "MISSING_RANK:1", " skip_rearm"}) {
    const absl::StatusOr<FaultSpec> f = ParseFaultSpec("spec.fault", text, 4);
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(f.status().message()), StartsWith("spec.fault: '")) << text;
    EXPECT_THAT(std::string(f.status().message()),
                HasSubstr("expected one of missing_rank:R, delay_rank:R:US"))
        << text;
  }
  EXPECT_THAT(std::string(ParseFaultSpec("spec.fault", "missing_rank:9", 4).status().message()),
              HasSubstr("rank 9 is out of range: the world has 4 ranks"));
  EXPECT_THAT(std::string(ParseFaultSpec("spec.fault", "crash_rank:0:extra", 4).status().message()),
              HasSubstr("crash_rank takes 1 argument (crash_rank:R), got 2"));
  EXPECT_THAT(std::string(ParseFaultSpec("spec.fault", "delay_rank:0:abc", 4).status().message()),
              HasSubstr("the delay 'abc' is not a decimal number of microseconds in 0..60000000"));
  EXPECT_THAT(std::string(ParseFaultSpec("spec.fault", "foo", 4).status().message()),
              HasSubstr("unknown fault kind 'foo'"));
}

// One spelling per value: "crash_rank:00" would run as crash_rank:0 but be recorded and logged
// as the client wrote it.
TEST(ParseFaultSpecTest, RefusesLeadingZerosNamingTheField) {
  for (const char* text : {"crash_rank:00", "missing_rank:01", "stall_rank:0003",
                           "delay_rank:1:0100", "delay_rank:01:5", "delay_rank:0:00"}) {
    const absl::StatusOr<FaultSpec> f = ParseFaultSpec("spec.fault", text, 4);
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(f.status().message()), StartsWith("spec.fault: '")) << text;
    EXPECT_THAT(std::string(f.status().message()), HasSubstr("without leading zeros")) << text;
  }
  EXPECT_THAT(std::string(ParseFaultSpec("--fault", "crash_rank:00", 0).status().message()),
              StartsWith("--fault: 'crash_rank:00': the rank '00' is not a decimal number "
                         "without leading zeros"));
  EXPECT_TRUE(ParseFaultSpec("spec.fault", "delay_rank:0:0", 4).ok());
  EXPECT_TRUE(ParseFaultSpec("spec.fault", "delay_rank:3:10", 4).ok());
}

TEST(ParseFaultSpecTest, WorldZeroChecksTheSyntaxOnly) {
  EXPECT_EQ(ParseFaultSpec("--fault", "missing_rank:9", 0)->rank, 9);
  EXPECT_THAT(std::string(ParseFaultSpec("--fault", "missing_rank:x", 0).status().message()),
              StartsWith("--fault: 'missing_rank:x': the rank 'x' is not a decimal number"));
}

TEST(ParseFaultSpecTest, RefusesLongFaultsWithoutEchoingThem) {
  EXPECT_TRUE(ParseFaultSpec("spec.fault", "skip_rearm", 4).ok());
  const std::string megabyte(1 << 20, 'x');
  const absl::StatusOr<FaultSpec> f = ParseFaultSpec("spec.fault", megabyte, 4);
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.status().message(), "spec.fault: 1048576 bytes, the limit is 64");
  // 65 bytes of an otherwise valid fault: the limit, not the grammar, refuses it.
  const std::string padded = "delay_rank:0:" + std::string(52, '0');
  ASSERT_EQ(padded.size(), 65u);
  EXPECT_EQ(ParseFaultSpec("spec.fault", padded, 4).status().message(),
            "spec.fault: 65 bytes, the limit is 64");
  // 64 bytes are within the limit, so the grammar judges them: no canonical fault is that long.
  const std::string at_limit = "delay_rank:0:" + std::string(51, '0');
  ASSERT_EQ(at_limit.size(), 64u);
  EXPECT_THAT(std::string(ParseFaultSpec("spec.fault", at_limit, 4).status().message()),
              HasSubstr("without leading zeros"));
}

TEST(ParseFaultSpecTest, EscapesControlCharactersItEchoes) {
  EXPECT_THAT(std::string(ParseFaultSpec("spec.fault", "\x1b[2J", 4).status().message()),
              StartsWith("spec.fault: '\\x1b[2J'"));
}

}  // namespace
}  // namespace colltest::common
