// lamport_tb's own-contribution rule (worker/protocol/triple_buffer.h), at the kernel level: a rank
// pushes its input to its peers only and sums its own input directly, so its own triple-buffer
// slot stays armed on every call, and every rank sums the same canonical bits. The GPU kernel
// (LamportTbKernel) follows the same rule; a cpu that staged its own contribution would pass the
// end-to-end tests but no longer be the specification of the GPU kernel.
#include "gtest/gtest.h"
#include "tests/unit/worker/cpu_tb_group.h"

namespace colltest::cpu {
namespace {

constexpr DType kT = DType::kBf16;
constexpr uint32_t kWorld = 3, kGrid = 2, kM = 4, kN = 32;
constexpr size_t kCount = size_t{kM} * kN;

// Small integers, so that sums are exact; every fourth element is -0.0 on every rank.
float InputAt(uint32_t rank, uint64_t call, size_t i) {
  return i % 4 == 0 ? -0.0f : static_cast<float>((rank + call + i) % 7) - 3.0f;
}

class LamportTbOwnSlot : public ::testing::Test {
 protected:
  void RunCall(uint64_t call) {
    group_.RunCall(&LamportTbBlock<kT>, kM, kN, kGrid,
                   [call](uint32_t r, size_t i) { return InputAt(r, call, i); });
  }

  bool OwnSlotsArmed(uint32_t r) const {
    for (uint32_t b = 0; b < protocol::kTbBuffers; ++b) {
      for (size_t k = 0; k < kCount * 2 / 16; ++k) {
        if (Arrived<kT>(LoadPack(group_.memory(r).tb_slot(b, r) + k * 16))) return false;
      }
    }
    return true;
  }

  CpuTbGroup group_{kWorld, kWorld, kCount};
};

TEST_F(LamportTbOwnSlot, OwnSlotStaysArmedAndSumsAreExact) {
  for (uint64_t call = 0; call < 5; ++call) {
    RunCall(call);
    for (uint32_t r = 0; r < kWorld; ++r) {
      EXPECT_EQ(group_.hung_block(r), -1) << "rank " << r << " hung, call " << call;
      EXPECT_TRUE(OwnSlotsArmed(r)) << "rank " << r << " staged its own input, call " << call;
      // Its peers' slots of this call's buffer hold what they pushed.
      const uint32_t buf = protocol::TbBuffer(call);
      const uint32_t peer = (r + 1) % kWorld;
      EXPECT_TRUE(Arrived<kT>(LoadPack(group_.memory(r).tb_slot(buf, peer))));
      for (size_t i = 0; i < kCount; ++i) {
        float want = 0.0f;  // canonical -0.0 from every rank sums to +0.0
        for (uint32_t src = 0; src < kWorld; ++src) want += InputAt(src, call, i) + 0.0f;
        ASSERT_EQ(group_.residual_out(r, i), FloatToBf16(want))
            << "rank " << r << " call " << call << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace colltest::cpu
