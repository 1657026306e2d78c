// The GPU backend's host-side rules that need no GPU: how run-time (world, dtype, packs per
// thread) map onto kernel instantiations (kernel_dispatch.h), which every launch and occupancy
// query of the kernels goes through, and where the private buffers lie (scratch_layout.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "worker/backends/gpu/kernel_dispatch.h"
#include "worker/backends/gpu/scratch_layout.h"
#include "worker/case_driver.h"

namespace colltest::gpu {
namespace {

// What a dispatched callback saw, or the refusal: the status type the dispatch requires.
struct Outcome {
  std::optional<Unsupported> unsupported;
  uint32_t world = 0;
  std::optional<DType> dtype;
  uint32_t packs = 0;

  Outcome() = default;
  Outcome(Unsupported u) : unsupported(u) {}  // NOLINT: as KernelStatus takes it
  bool operator==(const Outcome& o) const {
    return unsupported == o.unsupported && world == o.world && dtype == o.dtype && packs == o.packs;
  }
};

// As a launch and as an occupancy query use the dispatch: each callback names the instantiation.
Outcome Dispatched(uint32_t world, DType dtype, uint32_t packs) {
  return DispatchWorldDtypePacks(world, dtype, packs, [](auto w, auto d, auto p) {
    Outcome o;
    o.world = decltype(w)::value;
    o.dtype = decltype(d)::value;
    o.packs = decltype(p)::value;
    return o;
  });
}

const std::vector<DType> kEveryDtypeValue = {DType::kBf16, DType::kFp16, DType::kFp32,
                                             static_cast<DType>(3), static_cast<DType>(200)};

TEST(KernelDispatch, SupportedWorldIsTheDispatchedList) {
  std::vector<uint32_t> supported;
  for (uint32_t w = 0; w <= 64; ++w) {
    const Outcome o = DispatchWorld(w, [](auto v) {
      Outcome r;
      r.world = decltype(v)::value;
      return r;
    });
    EXPECT_EQ(SupportedWorld(w), !o.unsupported) << "world " << w;
    if (o.unsupported) {
      EXPECT_EQ(*o.unsupported, (Unsupported{KernelParam::kWorld, w}));
    } else {
      EXPECT_EQ(o.world, w);
      supported.push_back(w);
    }
  }
  EXPECT_EQ(supported, (std::vector<uint32_t>{2, 4, 8}));
}

TEST(KernelDispatch, EveryDtypeHasAKernelAndNothingElseDoes) {
  for (DType t : kEveryDtypeValue) {
    const Outcome o = DispatchDtype(t, [](auto d) {
      Outcome r;
      r.dtype = decltype(d)::value;
      return r;
    });
    EXPECT_EQ(SupportedDtype(t), !o.unsupported) << static_cast<int>(t);
    if (o.unsupported) {
      EXPECT_EQ(*o.unsupported, (Unsupported{KernelParam::kDtype, static_cast<uint32_t>(t)}));
    } else {
      EXPECT_EQ(*o.dtype, t);
    }
  }
  EXPECT_TRUE(SupportedDtype(DType::kBf16) && SupportedDtype(DType::kFp16) &&
              SupportedDtype(DType::kFp32));
}

// Each value either reaches exactly its instantiation or is refused naming the first parameter
// without a kernel (world, then dtype, then packs per thread). A launch and the occupancy query
// that sizes its grid ask the same question and so get the same answer: before, the occupancy of
// an unsupported world was that of 8 ranks while the launch refused it.
TEST(KernelDispatch, OneAnswerPerValueNamingTheFirstUnsupportedParameter) {
  for (uint32_t w = 0; w <= 9; ++w) {
    for (DType t : kEveryDtypeValue) {
      for (uint32_t p = 0; p <= 16; ++p) {
        const Outcome o = Dispatched(w, t, p);
        std::optional<Unsupported> want;
        if (!SupportedWorld(w)) {
          want = Unsupported{KernelParam::kWorld, w};
        } else if (!SupportedDtype(t)) {
          want = Unsupported{KernelParam::kDtype, static_cast<uint32_t>(t)};
        } else if (!SupportedPacksPerThread(p)) {
          want = Unsupported{KernelParam::kPacksPerThread, p};
        }
        ASSERT_EQ(o.unsupported, want)
            << "world " << w << " dtype " << static_cast<int>(t) << " packs " << p;
        if (!want) {
          EXPECT_EQ(o.world, w);
          EXPECT_EQ(*o.dtype, t);
          EXPECT_EQ(o.packs, p);
        }
        EXPECT_EQ(Dispatched(w, t, p), o) << "the same question, the same answer";
      }
    }
  }
}

// lamport_tb's launch and its block shape derive packs per thread with TbPacksPerThread: every
// count it picks must have a kernel, or a row would be refused that fits.
TEST(KernelDispatch, EveryPacksPerThreadTheShapePicksHasAKernel) {
  for (uint32_t row_packs = 1; row_packs <= kMaxRowPacks * kMaxTbThreads; row_packs += 7) {
    for (uint32_t threads :
         {32u, 64u, 256u, 512u, 896u, 1024u, TbThreads(row_packs, 32), TbThreads(row_packs, 64)}) {
      const uint32_t p = TbPacksPerThread(row_packs, threads);
      if (p == 0) {
        EXPECT_GT(row_packs, kMaxRowPacks * threads);
        continue;
      }
      EXPECT_TRUE(SupportedPacksPerThread(p)) << row_packs << " packs at " << threads;
    }
  }
}

TEST(KernelDispatch, TheRefusalNamesTheParameterAndTheValuesThatExist) {
  EXPECT_EQ(UnsupportedText({KernelParam::kWorld, 3}),
            "world = 3: kernels are instantiated for world 2, 4, 8 only");
  EXPECT_EQ(UnsupportedText({KernelParam::kDtype, 7}),
            "dtype = 7: kernels are instantiated for dtype bf16, fp16, fp32 only");
  EXPECT_EQ(
      UnsupportedText({KernelParam::kPacksPerThread, 0}),
      "packs per thread = 0: lamport_tb is instantiated for packs per thread 1, 2, 4, 8 only");
}

// ---- The private buffers

constexpr size_t kCapacity = size_t{6} << 20;

TEST(ScratchLayout, BuffersFollowEachOtherWithoutOverlapAndFillTheTotal) {
  const ScratchLayout l = MakeScratchLayout(kCapacity, worker::kGraphStressCalls);
  struct Region {
    const char* name;
    size_t offset, bytes;
  };
  // Each buffer's need at the largest case: m * n * sizeof(T) <= capacity, so m * n fp32
  // reference values <= 2 * capacity for the narrowest T.
  const size_t ref = kCapacity / ElemBytes(DType::kBf16) * sizeof(float);
  const std::vector<Region> regions = {
      {"residual", l.residual_offset, kCapacity},
      {"residual_out", l.residual_out_offset, kCapacity},
      {"out", l.out_offset, kCapacity},
      {"want_residual_out", l.want_residual_out_offset, ref},
      {"want_out", l.want_out_offset, ref},
      {"weight", l.weight_offset, kWeightBytes},
      {"accum", l.accum_offset, worker::kGraphStressCalls * sizeof(DiffAccum)},
      // A quantising epilogue's codes (one byte an element at most), row scales and block scales.
      {"quant_codes", l.quant_codes_offset, kCapacity / ElemBytes(DType::kBf16)},
      {"quant_row_scales", l.quant_row_scales_offset, kMaxQuantRows * sizeof(float)},
      {"quant_block_scales", l.quant_block_scales_offset,
       kCapacity / ElemBytes(DType::kBf16) / 16 + kMaxQuantRows},
  };
  size_t end = 0;
  for (const Region& r : regions) {
    EXPECT_GE(r.offset, end) << r.name << " overlaps the buffer before it";
    EXPECT_EQ(r.offset % 16, 0u) << r.name;
    end = r.offset + r.bytes;
  }
  EXPECT_LE(end, l.total);
  EXPECT_EQ(l.accum_offset % kScratchAlign, 0u);
  EXPECT_EQ(l.total % kScratchAlign, 0u);
}

TEST(ScratchLayout, TotalIsWhatTheBackendAllocates) {
  // Residual, outputs, two fp32 references, the weight, two 4096-byte blocks of accumulators
  // (64 of 104 bytes), then the quantised outputs: codes (capacity / 2), 65536 row scales and
  // the block scales (capacity / 32 + 65536), each rounded up to 4096 bytes.
  const ScratchLayout l = MakeScratchLayout(kCapacity, worker::kGraphStressCalls);
  EXPECT_EQ(sizeof(DiffAccum), 104u);
  EXPECT_EQ(l.accum_offset, 7 * kCapacity + kWeightBytes);
  EXPECT_EQ(l.quant_codes_offset, l.accum_offset + 8192);
  EXPECT_EQ(l.total, l.quant_codes_offset + kCapacity / 2 + 65536 * 4 +
                         ScratchAlignUp(kCapacity / 32 + 65536));
  // More checks than two blocks hold get more blocks, not an overrun.
  const ScratchLayout more = MakeScratchLayout(kCapacity, 100);
  EXPECT_EQ(more.quant_codes_offset - more.accum_offset, ScratchAlignUp(100 * sizeof(DiffAccum)));
  EXPECT_EQ(more.total - more.quant_codes_offset, l.total - l.quant_codes_offset);
}

}  // namespace
}  // namespace colltest::gpu
