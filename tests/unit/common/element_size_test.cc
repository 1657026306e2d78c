#include "common/element_size.h"

#include "gtest/gtest.h"
#include "worker/numerics/dtype.h"

namespace colltest::common {
namespace {

TEST(ElementSizeTest, BytesByDType) {
  EXPECT_EQ(ElementBytes(v1::DTYPE_BF16), 2u);
  EXPECT_EQ(ElementBytes(v1::DTYPE_FP16), 2u);
  EXPECT_EQ(ElementBytes(v1::DTYPE_FP32), 4u);
  EXPECT_EQ(ElementBytes(v1::DTYPE_UNSPECIFIED), 2u);  // treated as bf16
  EXPECT_EQ(PackElems(v1::DTYPE_BF16), 8u);
  EXPECT_EQ(PackElems(v1::DTYPE_FP32), 4u);
}

// The numerics keep a proto-free twin over their own DType; the two must agree.
TEST(ElementSizeTest, TheNumericsAgree) {
  const std::pair<v1::DType, DType> pairs[] = {{v1::DTYPE_BF16, DType::kBf16},
                                               {v1::DTYPE_FP16, DType::kFp16},
                                               {v1::DTYPE_FP32, DType::kFp32}};
  for (const auto& [api, numerics] : pairs) {
    EXPECT_EQ(ElementBytes(api), ::colltest::ElemBytes(numerics));
    EXPECT_EQ(PackElems(api), ::colltest::PackElems(numerics));
  }
}

}  // namespace
}  // namespace colltest::common
