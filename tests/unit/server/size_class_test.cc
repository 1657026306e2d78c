#include "server/runs/size_class.h"

#include "gtest/gtest.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;

TEST(SizeClassTest, EachBoundBelongsToTheClassItCloses) {
  EXPECT_EQ(SizeClass(0), "le_64KiB");
  EXPECT_EQ(SizeClass(65536), "le_64KiB");
  EXPECT_EQ(SizeClass(65537), "le_1MiB");
  EXPECT_EQ(SizeClass(1048576), "le_1MiB");
  EXPECT_EQ(SizeClass(1048577), "le_8MiB");
  EXPECT_EQ(SizeClass(8388608), "le_8MiB");
  EXPECT_EQ(SizeClass(8388609), "gt_8MiB");
}

TEST(SizeClassTest, InputBytesCountTheElementSize) {
  EXPECT_EQ(CaseInputBytes(1, 32768, v1::DTYPE_BF16), 65536u);
  EXPECT_EQ(CaseInputBytes(1, 32768, v1::DTYPE_FP16), 65536u);
  EXPECT_EQ(CaseInputBytes(1, 32768, v1::DTYPE_FP32), 131072u);
  // UNSPECIFIED is bf16 in the API.
  EXPECT_EQ(CaseInputBytes(1, 32768, v1::DTYPE_UNSPECIFIED), 65536u);
  // Beyond 32 bits: m x n alone overflows uint32_t.
  EXPECT_EQ(CaseInputBytes(65536, 65536, v1::DTYPE_FP32), uint64_t{1} << 34);
}

TEST(SizeClassTest, OfACaseUsesItsShapeAndDtype) {
  v1::CaseResult c;
  c.set_m(8);
  c.set_n(4096);
  c.set_dtype(v1::DTYPE_BF16);  // 64 KiB
  EXPECT_EQ(SizeClassOf(c), "le_64KiB");
  c.set_dtype(v1::DTYPE_FP32);  // 128 KiB
  EXPECT_EQ(SizeClassOf(c), "le_1MiB");
}

}  // namespace
}  // namespace colltest::server
