// The collective kernels with every rank of a group on one GPU: W ranks' kernels on W streams of
// one device, each rank's registered memory a plain allocation of that device (the kernels reach a
// peer only through DeviceGroup::base, whether IPC-mapped or not), the grids sized so that all W
// co-reside. It checks the kernels' protocols and results at W = 2, 4 and 8 on any box with one
// GPU; the timings belong to the 2-GPU runs of gpu_test and the benchmark (bench/NOTES.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "worker/backends/gpu/device_layout.h"
#include "worker/backends/gpu/gpu_handles.h"
#include "worker/backends/gpu/kernels.h"
#include "worker/backends/gpu/nccl_kernels.h"
#include "worker/backends/gpu/scratch_layout.h"
#include "worker/numerics/quant_breaks.h"
#include "worker/numerics/tolerance.h"

namespace colltest::gpu {
namespace {

// A runtime call's Error or a launcher's KernelStatus.
#define ASSERT_GPU(expr)                                           \
  do {                                                             \
    const KernelStatus s_ = (expr);                                \
    ASSERT_TRUE(s_.ok()) << #expr << ": " << KernelStatusText(s_); \
  } while (0)

// One host thread launches every rank's kernels. With CUDA's lazy module loading the first launch
// of a kernel (two_kernel's second one) loads its module and waits while a rank's first kernel
// spins for a peer whose launch comes after it on this same thread: a hang that separate worker
// processes cannot have. Loading every module at start avoids it; set before the first CUDA call.
[[maybe_unused]] const bool kEagerModules = setenv("CUDA_MODULE_LOADING", "EAGER", 1) == 0;

constexpr uint32_t kThreads = 512;  // the variants other than lamport_tb, as the backend runs them

// The kernels as the backend launches them per variant (gpu_case_runner.cc); kReduceScatter is
// two_kernel's pair of kernels. kNcclNorm is the nccl anchor's norm kernel (NormFromSums) on the
// sums two_kernel's reduce-scatter leaves in every rank's tmp, as NCCL's all-reduce leaves them in
// the anchor: NCCL refuses two ranks on one GPU, so on one GPU this is how that kernel runs.
enum class Kind { kOneStage, kReduceScatter, kLamport, kLamportTb, kLamportTwoShot, kNcclNorm };

KernelStatus Launch(Kind kind, DType dtype, const DeviceGroup& g, const CallArgs& a, uint32_t grid,
                    uint32_t threads, Stream s) {
  switch (kind) {
    case Kind::kOneStage:
      return LaunchOneStage(dtype, g, a, grid, threads, s);
    case Kind::kReduceScatter: {
      const KernelStatus scattered = LaunchReduceScatter(dtype, g, a, grid, threads, s);
      if (!scattered.ok()) return scattered;
      return LaunchLoadNorm(dtype, g, a, grid, threads, s);
    }
    case Kind::kLamport:
      return LaunchLamport(dtype, g, a, grid, threads, s);
    case Kind::kLamportTb:
      return LaunchLamportTb(dtype, g, a, grid, threads, s);
    case Kind::kLamportTwoShot:
      return LaunchLamportTwoShot(dtype, g, a, grid, threads, s);
    case Kind::kNcclNorm: {
      const KernelStatus scattered = LaunchReduceScatter(dtype, g, a, grid, threads, s);
      if (!scattered.ok()) return scattered;
      return LaunchNormFromSums(dtype, g.base[g.rank] + g.layout.tmp_offset, a, grid, threads, s);
    }
  }
  return Unsupported{KernelParam::kWorld, g.world};  // not reached: every Kind is handled
}

struct Shape {
  Kind kind;
  DType dtype;
  uint32_t world;
  uint32_t n;
  std::vector<uint32_t> ms;  // one call per entry, in turn
};

std::string KindName(Kind k) {
  static const char* names[] = {"one_stage",  "two_kernel",       "lamport",
                                "lamport_tb", "lamport_two_shot", "nccl_norm"};
  return names[static_cast<int>(k)];
}

std::string Describe(const Shape& s, uint32_t m) {
  return KindName(s.kind) + " " + DTypeName(s.dtype) + " W=" + std::to_string(s.world) +
         " n=" + std::to_string(s.n) + " m=" + std::to_string(m);
}

// One rank's allocations and stream.
struct Rank {
  DeviceMemory<uint8_t> region, residual, residual_out, out, weight;
  DeviceMemory<float> want_residual_out, want_out;
  DeviceMemory<DiffAccum> accum;
  // The quantising epilogue's outputs: codes (at most one byte an element), fp8_token's row
  // scales, nvfp4's block scales.
  DeviceMemory<uint8_t> codes, block_scales;
  DeviceMemory<float> row_scales;
  HostMappedMemory<HangRecord> hang;
  StreamHandle stream;
};

class OneDeviceGroup {
 public:
  // Allocates and arms W ranks for cases up to `capacity` bytes per rank.
  void SetUp(uint32_t world, DType dtype, size_t capacity) {
    world_ = world;
    dtype_ = dtype;
    layout_ = MakeGpuLayout(capacity, world);
    ranks_.resize(world);
    ASSERT_GPU(SetDevice(0));
    DeviceInfo info{};
    ASSERT_GPU(GetDeviceInfo(0, &info));
    multiprocessors_ = static_cast<uint32_t>(info.multiprocessors);
    for (Rank& r : ranks_) {
      ASSERT_GPU(AllocateDevice(layout_.total, &r.region));
      ASSERT_GPU(Memset(r.region.get(), 0, layout_.input_offset));  // Signal and control
      for (auto* buf : {&r.residual, &r.residual_out, &r.out, &r.weight}) {
        ASSERT_GPU(AllocateDevice(layout_.capacity, buf));
      }
      ASSERT_GPU(AllocateDevice(layout_.capacity * 2, &r.want_residual_out));
      ASSERT_GPU(AllocateDevice(layout_.capacity * 2, &r.want_out));
      ASSERT_GPU(AllocateDevice(sizeof(DiffAccum), &r.accum));
      ASSERT_GPU(AllocateDevice(layout_.capacity / 2, &r.codes));
      ASSERT_GPU(AllocateDevice(layout_.capacity / 16 + kMaxQuantRows, &r.block_scales));
      ASSERT_GPU(AllocateDevice(kMaxQuantRows * sizeof(float), &r.row_scales));
      ASSERT_GPU(AllocateHostMapped(sizeof(HangRecord), &r.hang));
      *r.hang.get() = HangRecord{};
      ASSERT_GPU(CreateStream(&r.stream));
      ASSERT_GPU(LaunchArm(dtype, r.region.get() + layout_.lamport_offset, layout_.capacity,
                           r.stream.get()));
      for (uint32_t b = 0; b < protocol::kTbBuffers; ++b) {
        for (uint32_t s = 0; s < world; ++s) {
          ASSERT_GPU(LaunchArm(dtype, r.region.get() + layout_.TbSlotOffset(b, s),
                               layout_.tb_capacity, r.stream.get()));
        }
      }
    }
    ASSERT_GPU(DeviceSynchronize());
  }

  DeviceGroup Group(uint32_t rank) {
    DeviceGroup g{};
    for (uint32_t r = 0; r < world_; ++r) g.base[r] = ranks_[r].region.get();
    g.layout = layout_;
    g.rank = rank;
    g.world = world_;
    void* dev = nullptr;
    EXPECT_EQ(HostGetDevicePointer(&dev, ranks_[rank].hang.get()), kSuccess);
    g.hang = static_cast<HangRecord*>(dev);
    return g;
  }

  CallArgs Args(uint32_t rank, uint32_t m, uint32_t n, uint64_t timeout_ns) {
    Rank& r = ranks_[rank];
    CallArgs a;
    a.m = m;
    a.n = n;
    a.residual_in = r.residual.get();
    a.weight = r.weight.get();
    a.residual_out = r.residual_out.get();
    a.out = r.out.get();
    a.timeout_ns = timeout_ns;
    a.quant = Quant(rank);
    return a;
  }

  // The epilogue of the calls that follow (off until set): the defaults of a case, strict.
  void SetQuant(QuantScheme scheme, bool keep_normed) {
    quant_.on = true;
    quant_.scheme = scheme;
    quant_.keep_normed = keep_normed;
    quant_.world = world_;
  }
  void SetQuantBreaks(uint32_t breaks) { quant_.breaks = breaks; }  // QuantBreak flags
  QuantArgs Quant(uint32_t rank) {
    QuantArgs q = quant_;
    q.codes = ranks_[rank].codes.get();
    q.row_scales = ranks_[rank].row_scales.get();
    q.block_scales = ranks_[rank].block_scales.get();
    return q;
  }

  // Threads and grid of `kind` at m, equal on every rank. Each rank gets half of its share of the
  // device: a kernel launched early (LaunchEarly) holds its blocks on the multiprocessors while the
  // kernel before it runs, and with every rank on one device those blocks of one rank (two_kernel's
  // second kernel) could keep a peer's first kernel from becoming resident, which on separate
  // devices cannot happen.
  void LaunchShape(Kind kind, uint32_t n, uint32_t m, uint32_t* threads, uint32_t* grid) {
    int per_sm = 0;
    if (kind == Kind::kLamportTb) {  // kNcclNorm: two_kernel's grid, as its reduce-scatter
      TbShape tb;
      ASSERT_GPU(LamportTbBlockShape(world_, dtype_, n, 0, &tb));
      *threads = tb.threads;
      per_sm = tb.blocks_per_sm;
    } else {
      *threads = kThreads;
      ASSERT_GPU(SpinKernelBlocksPerSm(world_, kThreads, &per_sm));
    }
    ASSERT_GT(per_sm, 0);
    const uint32_t limit = std::min<uint32_t>(per_sm * multiprocessors_ / (2 * world_),
                                              protocol::GpuLimits::kMaxBlocks);
    const size_t packs = static_cast<size_t>(m) * n / PackElems(dtype_);
    const uint32_t part = static_cast<uint32_t>((packs / world_ + *threads - 1) / *threads);
    uint32_t g = kind == Kind::kOneStage || kind == Kind::kLamportTb ? m : std::max(m, part);
    *grid = std::max(1u, std::min(g, limit));
  }

  // Generates call `call`'s inputs of every rank, launches the collective on every rank and
  // checks each rank's outputs; returns the mismatches of every rank.
  void Call(Kind kind, uint32_t n, uint32_t m, uint64_t call, std::vector<uint64_t>* mismatches) {
    uint32_t threads = 0, grid = 0;
    LaunchShape(kind, n, m, &threads, &grid);
    for (uint32_t q = 0; q < world_; ++q) {
      Rank& r = ranks_[q];
      GenerateArgs gen{dtype_,
                       Pattern::kNormal,
                       7,
                       call,
                       q,
                       m,
                       n,
                       r.region.get() + layout_.input_offset,
                       r.residual.get()};
      ASSERT_GPU(LaunchGenerate(gen, r.stream.get()));
      ASSERT_GPU(LaunchWeight(dtype_, Pattern::kNormal, 7, n, r.weight.get(), r.stream.get()));
    }
    for (uint32_t q = 0; q < world_; ++q) {
      const DeviceGroup g = Group(q);
      const CallArgs a = Args(q, m, n, 2'000'000'000ull);
      Stream s = ranks_[q].stream.get();
      ASSERT_GPU(Launch(kind, dtype_, g, a, grid, threads, s));
    }
    CheckAll(n, m, call, mismatches);
  }

  void CheckAll(uint32_t n, uint32_t m, uint64_t call, std::vector<uint64_t>* mismatches) {
    mismatches->assign(world_, 0);
    for (uint32_t q = 0; q < world_; ++q) {
      Rank& r = ranks_[q];
      ASSERT_GPU(MemsetAsync(r.accum.get(), 0, sizeof(DiffAccum), r.stream.get()));
      CheckArgs c{dtype_,
                  Pattern::kNormal,
                  7,
                  call,
                  world_,
                  m,
                  n,
                  true,
                  1e-6f,
                  ProfileFor(ToleranceKind::kStrict, dtype_),
                  r.residual_out.get(),
                  r.out.get(),
                  r.want_residual_out.get(),
                  r.want_out.get(),
                  r.accum.get(),
                  Quant(q)};
      ASSERT_GPU(LaunchCheck(c, r.stream.get()));
    }
    for (uint32_t q = 0; q < world_; ++q) {
      ASSERT_GPU(StreamSynchronize(ranks_[q].stream.get()));
      DiffAccum d;
      ASSERT_GPU(MemcpyToHost(&d, ranks_[q].accum.get(), sizeof d));
      // residual_out, and out where the norm wrote it; a quantising call's codes apart.
      const uint64_t elements = static_cast<uint64_t>(m) * n;
      EXPECT_EQ(d.checked, elements * (quant_.WritesNormed() ? 2 : 1)) << "rank " << q;
      EXPECT_EQ(d.quant_checked_codes, quant_.on ? elements : 0) << "rank " << q;
      (*mismatches)[q] = d.mismatches + d.quant_code_mismatches + d.quant_scale_mismatches;
      const HangRecord& h = *ranks_[q].hang.get();
      EXPECT_EQ(h.valid, 0u) << "rank " << q << " recorded a hang: phase " << h.phase << " block "
                             << h.block << " peer " << h.peer << " pack " << h.pack;
    }
  }

  uint64_t TbCall(uint32_t rank) {
    RankControl c;
    EXPECT_EQ(MemcpyToHost(&c, ranks_[rank].region.get() + layout_.control_offset, sizeof c),
              kSuccess);
    return c.tb_call;
  }
  Rank& rank(uint32_t q) { return ranks_[q]; }
  uint32_t world() const { return world_; }

 private:
  uint32_t world_ = 0;
  DType dtype_ = DType::kBf16;
  GpuLayout layout_;
  QuantArgs quant_;
  uint32_t multiprocessors_ = 0;
  std::vector<Rank> ranks_;
};

bool HaveDevice() {
  int n = 0;
  return GetDeviceCount(&n) == kSuccess && n > 0;
}

void RunShape(const Shape& s) {
  if (!HaveDevice()) GTEST_SKIP() << "no GPU";
  const uint32_t m_max = *std::max_element(s.ms.begin(), s.ms.end());
  OneDeviceGroup group;
  group.SetUp(s.world, s.dtype, static_cast<size_t>(m_max) * s.n * ElemBytes(s.dtype));
  uint64_t call = 0;
  for (uint32_t m : s.ms) {
    std::vector<uint64_t> bad;
    group.Call(s.kind, s.n, m, call++, &bad);
    for (uint32_t q = 0; q < s.world; ++q) {
      ASSERT_EQ(bad[q], 0u) << Describe(s, m) << " rank " << q << " call " << call - 1;
    }
  }
  if (s.kind == Kind::kLamportTb || s.kind == Kind::kLamportTwoShot) {
    for (uint32_t q = 0; q < s.world; ++q) EXPECT_EQ(group.TbCall(q), s.ms.size());
  }
}

// m varies call to call: each lamport_tb call clears what the previous one left, whatever its
// size; odd m and 1 row leave most blocks idle.
const std::vector<uint32_t> kMs = {1, 7, 64, 3, 257, 1, 128, 33, 1024, 2, 5};

class EveryVariant : public ::testing::TestWithParam<std::tuple<Kind, uint32_t>> {};

TEST_P(EveryVariant, ExactAtEveryWorldAndDtype) {
  const auto [kind, world] = GetParam();
  for (DType t : {DType::kBf16, DType::kFp16, DType::kFp32}) {
    RunShape({kind, t, world, 7168, kMs});
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, EveryVariant,
                         ::testing::Combine(::testing::Values(Kind::kOneStage, Kind::kReduceScatter,
                                                              Kind::kLamport, Kind::kLamportTb,
                                                              Kind::kLamportTwoShot),
                                            ::testing::Values(2u, 4u, 8u)),
                         [](const ::testing::TestParamInfo<EveryVariant::ParamType>& info) {
                           return KindName(std::get<0>(info.param)) + "_W" +
                                  std::to_string(std::get<1>(info.param));
                         });

// The nccl anchor's norm with every epilogue, kept normed or not, at W = 2, 4 and 8: every code,
// scale and T output exact (strict). n = 7176 ends in a short nvfp4 block.
TEST(NcclNorm, EveryEpilogueIsExactAtEveryWorld) {
  if (!HaveDevice()) GTEST_SKIP() << "no GPU";
  constexpr uint32_t kN = 7176;
  for (uint32_t world : {2u, 4u, 8u}) {
    for (DType t : {DType::kBf16, DType::kFp32}) {
      OneDeviceGroup group;
      group.SetUp(world, t, static_cast<size_t>(64) * kN * ElemBytes(t));
      uint64_t call = 0;
      for (QuantScheme scheme :
           {QuantScheme::kFp8Token, QuantScheme::kFp8Tensor, QuantScheme::kNvfp4}) {
        for (bool keep : {false, true}) {
          group.SetQuant(scheme, keep);
          for (uint32_t m : {1u, 64u}) {
            std::vector<uint64_t> bad;
            group.Call(Kind::kNcclNorm, kN, m, call++, &bad);
            if (HasFatalFailure()) return;
            for (uint32_t q = 0; q < world; ++q) {
              EXPECT_EQ(bad[q], 0u)
                  << "W=" << world << " " << DTypeName(t) << " " << QuantSchemeName(scheme)
                  << (keep ? " kept" : "") << " m=" << m << " rank " << q;
            }
          }
        }
      }
      // The same check fails a planted bug: truncating encoders (quant_breaks.h) in the kernel,
      // the check's reference untouched.
      group.SetQuant(QuantScheme::kFp8Token, false);
      group.SetQuantBreaks(kQuantBreakTruncate);
      std::vector<uint64_t> bad;
      group.Call(Kind::kNcclNorm, kN, 64, call++, &bad);
      if (HasFatalFailure()) return;
      for (uint32_t q = 0; q < world; ++q) EXPECT_GT(bad[q], 0u) << "truncate, rank " << q;
    }
  }
}

TEST(LamportTb, EveryRowWidthAndPacksPerThread) {
  // One pack per thread (n <= 8192 bf16), two (16384 bf16, 8192 fp32), four and eight.
  for (uint32_t n : {2880u, 4096u, 5120u, 8192u, 16384u, 32768u, 65536u}) {
    for (DType t : {DType::kBf16, DType::kFp32}) {
      if (n / PackElems(t) > kMaxRowPacks * kMaxTbThreads) continue;
      RunShape({Kind::kLamportTb, t, 2, n, {1, 9, 130, 2}});
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// A graph of lamport_tb calls launched early (programmatic edges) rotates the buffers on every
// replay; the result of the last replay is exact.
TEST(LamportTb, GraphReplaysRotateAndStayExact) {
  if (!HaveDevice()) GTEST_SKIP() << "no GPU";
  constexpr uint32_t kWorld = 2, kN = 7168, kM = 64, kCallsPerGraph = 16, kReplays = 20;
  OneDeviceGroup group;
  group.SetUp(kWorld, DType::kBf16, size_t{kM} * kN * 2);
  std::vector<uint64_t> bad;
  group.Call(Kind::kLamportTb, kN, kM, 0, &bad);  // inputs of call 0 stay in place
  uint32_t threads = 0, grid = 0;
  group.LaunchShape(Kind::kLamportTb, kN, kM, &threads, &grid);
  std::vector<GraphExecHandle> execs(kWorld);
  for (uint32_t q = 0; q < kWorld; ++q) {
    Stream s = group.rank(q).stream.get();
    ASSERT_GPU(BeginCapture(s));
    for (uint32_t i = 0; i < kCallsPerGraph; ++i) {
      ASSERT_GPU(LaunchLamportTb(DType::kBf16, group.Group(q),
                                 group.Args(q, kM, kN, 2'000'000'000ull), grid, threads, s));
    }
    GraphHandle graph;
    ASSERT_GPU(EndCaptureInto(s, &graph));
    ASSERT_GPU(Instantiate(graph, &execs[q]));
  }
  for (uint32_t r = 0; r < kReplays; ++r) {
    for (uint32_t q = 0; q < kWorld; ++q) {
      ASSERT_GPU(GraphLaunch(execs[q].get(), group.rank(q).stream.get()));
    }
  }
  group.CheckAll(kN, kM, 0, &bad);
  for (uint32_t q = 0; q < kWorld; ++q) {
    EXPECT_EQ(bad[q], 0u) << "rank " << q;
    EXPECT_EQ(group.TbCall(q), 1 + kCallsPerGraph * kReplays);
  }
}

// lamport_two_shot at 4 and 8 ranks over many calls of varying m, its reason to exist: each call
// re-arms what the previous one wrote, whatever their sizes.
TEST(LamportTwoShot, ManyCallsOfVaryingSizeAtFourAndEightRanks) {
  std::vector<uint32_t> ms;
  for (uint32_t i = 0; i < 30; ++i) ms.push_back(1 + (i * 37) % 300);
  for (uint32_t world : {4u, 8u}) {
    RunShape({Kind::kLamportTwoShot, DType::kBf16, world, 4096, ms});
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// A rank that never arrives: lamport_tb's wait on it ends at the deadline with a record that
// names the waiting rank, the phase and the missing peer.
TEST(LamportTb, AMissingPeerIsNamedAtTheDeadline) {
  if (!HaveDevice()) GTEST_SKIP() << "no GPU";
  OneDeviceGroup group;
  group.SetUp(2, DType::kBf16, size_t{8} * 7168 * 2);
  uint32_t threads = 0, grid = 0;
  group.LaunchShape(Kind::kLamportTb, 7168, 8, &threads, &grid);
  Stream s = group.rank(0).stream.get();
  ASSERT_GPU(LaunchLamportTb(DType::kBf16, group.Group(0), group.Args(0, 8, 7168, 50'000'000ull),
                             grid, threads, s));
  ASSERT_GPU(StreamSynchronize(s));
  const HangRecord h = *group.rank(0).hang.get();
  EXPECT_EQ(h.valid, 1u);
  EXPECT_EQ(h.rank, 0);
  EXPECT_EQ(h.phase, static_cast<int32_t>(Phase::kLamportTbConsume));
  EXPECT_EQ(h.peer, 1);
}

}  // namespace
}  // namespace colltest::gpu
