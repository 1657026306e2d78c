// lamport_two_shot at the kernel level on the cpu backend, at 4 and 8 ranks (its reason to exist)
// and 2: every call's sums exact on every rank, and what a call wrote into a rank's buffer is
// re-armed by the rank's next call (each peer's slot over the rank's part, the gather slot over
// everything), whatever the sizes of the two calls. The GPU kernel (LamportTwoShotKernel) follows
// the same rules; tests/gpu/one_device_group_test.cc runs it at the same world sizes.
#include <iterator>
#include <string>

#include "gtest/gtest.h"
#include "tests/unit/worker/cpu_tb_group.h"

namespace colltest::cpu {
namespace {

constexpr DType kT = DType::kBf16;
constexpr uint32_t kGrid = 3, kMaxM = 6, kN = 64;

// Small integers, so that sums are exact; every fifth element is -0.0 on every rank.
float InputAt(uint32_t rank, uint64_t call, size_t i) {
  return i % 5 == 0 ? -0.0f : static_cast<float>((rank * 3 + call + i) % 9) - 4.0f;
}

class LamportTwoShot : public ::testing::TestWithParam<uint32_t> {
 protected:
  void RunCall(uint64_t call, uint32_t m) {
    group_.RunCall(&LamportTwoShotBlock<kT>, m, kN, kGrid,
                   [call](uint32_t r, size_t i) { return InputAt(r, call, i); });
  }

  // Packs of `buffer` in rank r's memory that do not hold the sentinel.
  size_t ArrivedPacks(uint32_t r, uint32_t buffer) const {
    size_t n = 0;
    for (uint32_t src = 0; src < world_; ++src) {
      const uint8_t* slot = group_.memory(r).tb_slot(buffer, src);
      for (size_t k = 0; k < size_t{kMaxM} * kN * 2 / 16; ++k) {
        if (Arrived<kT>(LoadPack(slot + k * 16))) ++n;
      }
    }
    return n;
  }

  const uint32_t world_ = GetParam();
  CpuTbGroup group_{world_, 8, size_t{kMaxM} * kN};
};

TEST_P(LamportTwoShot, SumsAreExactAndTheNextCallReArmsWhatACallWrote) {
  // A large call followed by smaller ones: the clearing covers what the previous call wrote.
  const uint32_t ms[] = {kMaxM, 1, 3, kMaxM, kMaxM, 2, 5, 1};
  for (uint64_t call = 0; call < std::size(ms); ++call) {
    const uint32_t m = ms[call];
    RunCall(call, m);
    for (uint32_t r = 0; r < world_; ++r) {
      ASSERT_EQ(group_.hung_block(r), -1) << "rank " << r << " hung, call " << call;
      for (size_t i = 0; i < size_t{m} * kN; ++i) {
        float want = 0.0f;  // canonical -0.0 from every rank sums to +0.0
        for (uint32_t src = 0; src < world_; ++src) want += InputAt(src, call, i) + 0.0f;
        ASSERT_EQ(group_.residual_out(r, i), FloatToBf16(want))
            << "rank " << r << " call " << call << " element " << i;
      }
      // This call wrote its buffer and cleared the previous call's; the third is armed too.
      const uint32_t buf = protocol::TbBuffer(call);
      EXPECT_GT(ArrivedPacks(r, buf), 0u) << "rank " << r << " call " << call;
      for (uint32_t b = 0; b < protocol::kTbBuffers; ++b) {
        if (b != buf) {
          EXPECT_EQ(ArrivedPacks(r, b), 0u) << "rank " << r << " call " << call << " buffer " << b;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, LamportTwoShot, ::testing::Values(2u, 4u, 8u),
                         [](const ::testing::TestParamInfo<uint32_t>& info) {
                           return "W" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace colltest::cpu
