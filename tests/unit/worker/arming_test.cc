// The arming rule both backends' EnsureArmed follow (worker/protocol/arming.h): what a call of a
// Lamport variant finds armed decides which bytes of its staging are filled with sentinels first.
#include "worker/protocol/arming.h"

#include "gtest/gtest.h"

namespace colltest::protocol {
namespace {

using colltest::v1::VARIANT_LAMPORT;
using colltest::v1::VARIANT_LAMPORT_TB;
using colltest::v1::VARIANT_LAMPORT_TWO_SHOT;

TEST(Arming, TheFirstCallArmsItsBytes) {
  const auto step = NextArming(Armed{}, VARIANT_LAMPORT, DType::kBf16, 4096);
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->from, 0u);
  EXPECT_EQ(step->to, 4096u);
  EXPECT_EQ(step->after.dtype, DType::kBf16);
  EXPECT_EQ(step->after.bytes, 4096u);
  EXPECT_EQ(step->after.user, VARIANT_LAMPORT);
}

TEST(Arming, NothingToDoWithinWhatIsArmed) {
  const Armed armed{DType::kFp16, 8192, VARIANT_LAMPORT_TB};
  EXPECT_FALSE(NextArming(armed, VARIANT_LAMPORT_TB, DType::kFp16, 8192).has_value());
  EXPECT_FALSE(NextArming(armed, VARIANT_LAMPORT_TB, DType::kFp16, 16).has_value());
}

TEST(Arming, ALargerCallArmsOnlyTheGrowth) {
  const auto step =
      NextArming(Armed{DType::kFp32, 1024, VARIANT_LAMPORT}, VARIANT_LAMPORT, DType::kFp32, 4096);
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->from, 1024u);
  EXPECT_EQ(step->to, 4096u);
}

// A new dtype has a different sentinel: everything armed so far is re-armed, however small the
// call.
TEST(Arming, ANewDtypeReArmsEverythingArmedSoFar) {
  const auto step =
      NextArming(Armed{DType::kBf16, 8192, VARIANT_LAMPORT}, VARIANT_LAMPORT, DType::kFp32, 1024);
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->from, 0u);
  EXPECT_EQ(step->to, 8192u);
  EXPECT_EQ(step->after.dtype, DType::kFp32);
  EXPECT_EQ(step->after.bytes, 8192u);
}

// lamport_tb and lamport_two_shot share the triple buffer but each clears only what it wrote: the
// first call of the other one re-arms it whole.
TEST(Arming, TheOtherTripleBufferUserReArmsItWhole) {
  const Armed tb{DType::kBf16, 8192, VARIANT_LAMPORT_TB};
  const auto step = NextArming(tb, VARIANT_LAMPORT_TWO_SHOT, DType::kBf16, 1024);
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->from, 0u);
  EXPECT_EQ(step->to, 8192u);
  EXPECT_EQ(step->after.user, VARIANT_LAMPORT_TWO_SHOT);
  EXPECT_FALSE(NextArming(step->after, VARIANT_LAMPORT_TWO_SHOT, DType::kBf16, 8192).has_value());
}

// The Lamport staging has one user: whoever armed it last, lamport finds it armed.
TEST(Arming, LamportIsAlwaysItsStagingsOwnUser) {
  const Armed armed{DType::kBf16, 8192, colltest::v1::VARIANT_UNSPECIFIED};
  EXPECT_FALSE(NextArming(armed, VARIANT_LAMPORT, DType::kBf16, 8192).has_value());
}

}  // namespace
}  // namespace colltest::protocol
