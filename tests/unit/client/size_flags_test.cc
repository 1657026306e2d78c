#include "client/flags/size_flags.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

constexpr uint32_t kN = 7168;  // a bf16 row is 14336 bytes, an fp32 one 28672

std::string Message(const absl::StatusOr<std::vector<uint32_t>>& rows) {
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(rows.status().message());
}

TEST(ResolveRowsTest, NothingGivenLeavesTheDefault) {
  const auto rows = ResolveRows(SweepFlags{}, {kN}, v1::DTYPE_BF16);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(*rows, IsEmpty());
}

TEST(ResolveRowsTest, MAloneIsParsedAsAList) {
  SweepFlags flags;
  flags.m = "1,8..32,2:8:x4";
  // --m does not need one n: the rows are given directly.
  const auto rows = ResolveRows(flags, {1024, 2048}, v1::DTYPE_BF16);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(*rows, ElementsAre(1, 8, 16, 32, 2, 8));
  flags.m = "1:8:x1";
  EXPECT_THAT(Message(ResolveRows(flags, {kN}, v1::DTYPE_BF16)), StartsWith("--m: "));
}

TEST(ResolveRowsTest, BytesRangeBecomesRowsForTheDtype) {
  SweepFlags flags;
  flags.bytes = "14336:114688";  // 1 to 8 rows of bf16, doubling
  EXPECT_THAT(*ResolveRows(flags, {kN}, v1::DTYPE_BF16), ElementsAre(1, 2, 4, 8));
  EXPECT_THAT(*ResolveRows(flags, {kN}, v1::DTYPE_UNSPECIFIED), ElementsAre(1, 2, 4, 8));
  EXPECT_THAT(*ResolveRows(flags, {kN}, v1::DTYPE_FP16), ElementsAre(1, 2, 4, 8));
  flags.bytes = "8K:128K:x4";
  EXPECT_THAT(*ResolveRows(flags, {1024}, v1::DTYPE_FP32), ElementsAre(2, 8, 32));
  flags.bytes = "2KiB,32MiB";
  EXPECT_THAT(*ResolveRows(flags, {1024}, v1::DTYPE_BF16), ElementsAre(1, 16384));
  flags.bytes = "512B..2K:+512";
  EXPECT_THAT(*ResolveRows(flags, {256}, v1::DTYPE_BF16), ElementsAre(1, 2, 3, 4));
}

TEST(ResolveRowsTest, BeginEndFactorAsNcclTestsReadsThem) {
  SweepFlags flags;
  flags.bytes_begin = "8K";
  EXPECT_THAT(*ResolveRows(flags, {1024}, v1::DTYPE_BF16), ElementsAre(4));  // -e = -b
  flags.bytes_end = "64K";
  EXPECT_THAT(*ResolveRows(flags, {1024}, v1::DTYPE_BF16), ElementsAre(4, 8, 16, 32));
  flags.bytes_factor = "4";
  EXPECT_THAT(*ResolveRows(flags, {1024}, v1::DTYPE_BF16), ElementsAre(4, 16));
  EXPECT_THAT(*ResolveRows(flags, {1024}, v1::DTYPE_FP32), ElementsAre(2, 8));
}

TEST(ResolveRowsTest, RefusesSizesThatAreNotWholeRowsNamingFlagSizeAndRow) {
  SweepFlags flags;
  flags.bytes = "14336,20000";
  EXPECT_EQ(Message(ResolveRows(flags, {kN}, v1::DTYPE_BF16)),
            "--bytes: 20000 bytes is not a whole number of rows: a row is 14336 bytes (n 7168 x 2 "
            "bytes of bf16); nearest valid sizes: 14336 and 28672");
  flags.bytes = "8K";
  EXPECT_EQ(Message(ResolveRows(flags, {kN}, v1::DTYPE_FP32)),
            "--bytes: 8192 bytes is less than a row: a row is 28672 bytes (n 7168 x 4 bytes of "
            "fp32); the smallest valid size is 28672");
  flags.bytes = "0:64K:+8K";
  EXPECT_THAT(Message(ResolveRows(flags, {1024}, v1::DTYPE_BF16)),
              StartsWith("--bytes: 0 bytes is less than a row"));

  SweepFlags begin;
  begin.bytes_begin = "1000";
  begin.bytes_end = "1M";
  EXPECT_THAT(Message(ResolveRows(begin, {kN}, v1::DTYPE_BF16)),
              StartsWith("-b: 1000 bytes is less than a row: a row is 14336 bytes"));
}

TEST(ResolveRowsTest, RefusesMixedFlagsAndNotExactlyOneN) {
  SweepFlags flags;
  flags.m = "1,8";
  flags.bytes = "8K";
  EXPECT_THAT(Message(ResolveRows(flags, {1024}, v1::DTYPE_BF16)),
              StartsWith("--m: cannot be combined with --bytes"));
  flags.bytes.reset();
  flags.bytes_begin = "8K";
  EXPECT_THAT(Message(ResolveRows(flags, {1024}, v1::DTYPE_BF16)),
              StartsWith("--m: cannot be combined with -b"));

  SweepFlags both;
  both.bytes = "8K";
  both.bytes_end = "16K";
  EXPECT_THAT(Message(ResolveRows(both, {1024}, v1::DTYPE_BF16)),
              StartsWith("--bytes: cannot be combined with -b, -e or -f"));

  SweepFlags bytes;
  bytes.bytes = "8K";
  EXPECT_THAT(
      Message(ResolveRows(bytes, {1024, 2048}, v1::DTYPE_BF16)),
      HasSubstr("needs exactly one --hidden to turn bytes into rows (m = bytes / (n x element "
                "size)), got 1024,2048"));
  EXPECT_THAT(Message(ResolveRows(bytes, {}, v1::DTYPE_BF16)), HasSubstr("got none"));
}

TEST(ResolveRowsTest, RefusesBadBeginEndFactor) {
  SweepFlags flags;
  flags.bytes_end = "64K";
  EXPECT_EQ(Message(ResolveRows(flags, {1024}, v1::DTYPE_BF16)),
            "-e: needs -b, the smallest size in bytes per rank");
  flags.bytes_begin = "128K";
  EXPECT_EQ(Message(ResolveRows(flags, {1024}, v1::DTYPE_BF16)),
            "-e: 65536 bytes is below -b 131072 bytes");
  flags.bytes_begin = "8K";
  flags.bytes_factor = "1";
  EXPECT_EQ(Message(ResolveRows(flags, {1024}, v1::DTYPE_BF16)),
            "-f: the factor 1 must be 2 or more");
  flags.bytes_factor = "2x";
  EXPECT_THAT(Message(ResolveRows(flags, {1024}, v1::DTYPE_BF16)), StartsWith("-f: cannot parse"));
  flags.bytes_factor.reset();
  flags.bytes_begin = "8Q";
  EXPECT_THAT(Message(ResolveRows(flags, {1024}, v1::DTYPE_BF16)), StartsWith("-b: cannot parse"));
}

TEST(ResolveRowsTest, RefusesTooManySizesAndTooManyRows) {
  SweepFlags flags;
  flags.bytes = "2K:100M:+2K";
  EXPECT_THAT(Message(ResolveRows(flags, {1024}, v1::DTYPE_BF16)),
              HasSubstr("more than 4096 values"));
  flags.bytes = "16T";
  EXPECT_EQ(Message(ResolveRows(flags, {1}, v1::DTYPE_BF16)),
            "--bytes: 17592186044416 bytes is m 8796093022208 rows, the limit is 4294967295");
}

}  // namespace
}  // namespace colltest::client
