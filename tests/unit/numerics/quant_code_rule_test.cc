// The per-code rule of the quant tolerances (quant_code_rule.h), which the host's diff and the GPU
// check kernel share: each scheme takes the codes' midpoint back to y's units its own way.
#include "worker/numerics/quant_code_rule.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "worker/numerics/dtype.h"
#include "worker/numerics/host_rounding.h"

namespace colltest {
namespace {

constexpr QuantTolerance kStrict = QuantTolerance::kStrict;
constexpr QuantTolerance kUlp = QuantTolerance::kUlp;
// e4m3fn codes of 1.0 and 1.125 (midpoint 1.0625); E2M1 codes of 1.0 and 1.5 (midpoint 1.25).
constexpr uint8_t kFp8One = 0x38, kFp8NextUp = 0x39;
constexpr uint8_t kE2m1One = 0x2, kE2m1NextUp = 0x3;

bool Accepted(QuantTolerance tol, const ElementCodes& e, uint8_t got, uint8_t want, float y,
              DType t = DType::kFp32) {
  return ElementCodeAccepted<HostRounding>(tol, e, got, want, y, t);
}

TEST(QuantCodeRule, EachSchemeTakesTheMidpointBackToYItsOwnWay) {
  // fp8_token: code units are y / scale, so the tie is 1.0625 * 0.5.
  const ElementCodes token{QuantScheme::kFp8Token, Fp8Format::kE4m3fn, 0.5f};
  EXPECT_TRUE(Accepted(kUlp, token, kFp8One, kFp8NextUp, 0.53125f));
  EXPECT_FALSE(Accepted(kUlp, token, kFp8One, kFp8NextUp, 2.125f));
  // fp8_tensor: code units are y * inverse, so the tie is 1.0625 / 4.
  const ElementCodes tensor{QuantScheme::kFp8Tensor, Fp8Format::kE4m3fn, 4.0f};
  EXPECT_TRUE(Accepted(kUlp, tensor, kFp8NextUp, kFp8One, 0.265625f));
  EXPECT_FALSE(Accepted(kUlp, tensor, kFp8NextUp, kFp8One, 4.25f));
  // nvfp4: code units are y * out, so the tie is 1.25 / 2; a zero output scale has no tie.
  const ElementCodes nvfp4{QuantScheme::kNvfp4, Fp8Format::kE4m3fn, 2.0f};
  EXPECT_TRUE(Accepted(kUlp, nvfp4, kE2m1One, kE2m1NextUp, 0.625f));
  EXPECT_FALSE(Accepted(kUlp, nvfp4, kE2m1One, kE2m1NextUp, 2.5f));
  const ElementCodes nvfp4_zero{QuantScheme::kNvfp4, Fp8Format::kE4m3fn, 0.0f};
  EXPECT_FALSE(Accepted(kUlp, nvfp4_zero, kE2m1One, kE2m1NextUp, 0.0f));
}

TEST(QuantCodeRule, UlpAcceptsOneStepAtATieOnceInTOnly) {
  const ElementCodes token{QuantScheme::kFp8Token, Fp8Format::kE4m3fn, 1.0f};
  const float near_tie = 1.0625f + 0x1p-10f;  // bf16 rounds it onto the tie, fp32 does not
  EXPECT_TRUE(Accepted(kUlp, token, kFp8One, kFp8NextUp, near_tie, DType::kBf16));
  EXPECT_FALSE(Accepted(kUlp, token, kFp8One, kFp8NextUp, near_tie, DType::kFp32));
  EXPECT_FALSE(Accepted(kStrict, token, kFp8One, kFp8NextUp, 1.0625f));
  // Two steps apart is never a tie of the two.
  EXPECT_FALSE(Accepted(kUlp, token, kFp8One, kFp8NextUp + 1, 1.125f));
}

TEST(QuantCodeRule, PlusAndMinusZeroAreOneValueInBothTolerances) {
  const ElementCodes fn{QuantScheme::kFp8Token, Fp8Format::kE4m3fn, 1.0f};
  const ElementCodes fnuz{QuantScheme::kFp8Token, Fp8Format::kE4m3fnuz, 1.0f};
  const ElementCodes e2m1{QuantScheme::kNvfp4, Fp8Format::kE4m3fn, 1.0f};
  for (QuantTolerance tol : {kStrict, kUlp}) {
    EXPECT_TRUE(Accepted(tol, fn, 0x00, 0x80, 0.0f));
    EXPECT_TRUE(Accepted(tol, e2m1, 0x8, 0x0, 0.0f));
    EXPECT_FALSE(Accepted(tol, fnuz, 0x80, 0x00, 0.0f));  // 0x80 is fnuz's NaN
    EXPECT_FALSE(Accepted(tol, fn, 0x7f, 0x7e, 448.0f));  // a NaN code is no step
  }
}

}  // namespace
}  // namespace colltest
