// End-to-end checks of the cuda backend: every variant, dtype, mode and pattern over the shapes the
// kernels claim, long stress loops of the Lamport variants, and every injected fault in both modes.
// A variant that cannot run a shape must answer UNSUPPORTED with a reason, never WRONG or HANG.
//
// One binary serves a box with a GPU per rank and a box whose GPUs offer slots (colltestd
// --ranks-per-gpu N, the ranks of a GPU under MPS; tests/gpu/run_on_box.sh STAGE=shared), so the
// group and the daemon come from the environment:
// - COLLTEST_GPU_WORLD=W: ranks of every group, on devices 0 .. W-1 (default 2, 2 to 8).
// - COLLTEST_GPU_DAEMON_ARGS: more colltestd flags, split at spaces ("--ranks-per-gpu 8").
// - COLLTEST_GPU_SUBSET=1: the short lists run at W = 4 and 8. Matrix shapes m in {1, 16, 64, 256}
//   x n in {7168, 4096}; fault rows of the kinds with a culprit only (missing_rank and
//   hang_end_sync with every variant, crash_rank and stall_rank once per mode).
// - COLLTEST_GPU_CULPRITS=last: fault rows blame only the last rank (default: rank 0 as well, one
//   variant per fault kind and mode).
// - COLLTEST_GPU_BACKEND=cpu (with COLLTEST_GPU_DAEMON_ARGS="--cpu-ranks 8"): a dry run of the
//   lists, verdicts and JSON off the box.
// Which dtype and pattern the matrix runs is the gtest filter's business.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace v1 = ::colltest::v1;

bool EnvSet(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != 0 && std::string(value) != "0";
}

uint32_t World() {
  static const uint32_t world = [] {
    const char* value = std::getenv("COLLTEST_GPU_WORLD");
    const long w = value != nullptr ? std::strtol(value, nullptr, 10) : 2;
    return static_cast<uint32_t>(std::clamp(w, 2L, 8L));
  }();
  return world;
}

bool Subset() { return EnvSet("COLLTEST_GPU_SUBSET"); }

std::vector<std::string> DaemonArgs() {
  // m = 2048 at n = 8192 in fp32 is 64 MiB per rank.
  std::vector<std::string> args = {"--max-case-bytes", "64MiB", "--allow-fault-injection"};
  if (const char* extra = std::getenv("COLLTEST_GPU_DAEMON_ARGS")) {
    std::istringstream words(extra);
    for (std::string word; words >> word;) args.push_back(word);
  }
  return args;
}

Daemon* StartDaemon() {
  const char* backend = std::getenv("COLLTEST_GPU_BACKEND");
  return Daemon::StartWithBackend(backend != nullptr && *backend != 0 ? backend : "cuda",
                                  DaemonArgs(), {"NCCL_NVLS_ENABLE=0"})
      .release();
}

// Ranks 0 .. W-1 on devices 0 .. W-1: with slots these are interleaved over the GPUs, so on a box
// of one GPU every rank of the group shares it.
void SetGroup(v1::SweepSpec& spec) {
  spec.set_world_size(World());
  for (uint32_t d = 0; d < World(); ++d) spec.add_devices(d);
}

// Whether two ranks of the group are slots of one GPU, as the daemon's ListDevices places them.
bool GroupSharesAGpu(const Daemon& daemon) {
  auto stub = daemon.Stub();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::ListDevicesResponse devices;
  const grpc::Status s = stub->ListDevices(&ctx, v1::ListDevicesRequest(), &devices);
  EXPECT_TRUE(s.ok()) << s.error_message();
  std::set<uint32_t> gpus;
  for (const v1::Device& d : devices.devices()) {
    if (d.index() < World() && !gpus.insert(d.physical_index()).second) return true;
  }
  return false;
}

class GpuTest : public ::testing::Test {
 protected:
  // One daemon for the suites that inject nothing: with --ranks-per-gpu every start pays the
  // concurrency probe and the workers' start. The fault suite stops it and runs its own.
  static void SetUpTestSuite() {
    if (shared_ == nullptr) shared_ = StartDaemon();
    daemon_ = shared_;
  }
  static void TearDownTestSuite() { daemon_ = nullptr; }
  static void StopShared() {
    delete shared_;
    shared_ = nullptr;
  }

  v1::RunResult Run(const v1::SweepSpec& spec) {
    auto stub = daemon_->Stub();
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(20));
    v1::RunRequest req;
    *req.mutable_spec() = spec;
    v1::RunResult result;
    const grpc::Status s = stub->Run(&ctx, req, &result);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return result;
  }

  static Daemon* daemon_;
  static Daemon* shared_;
  friend class SharedDaemonEnvironment;
};
Daemon* GpuTest::daemon_ = nullptr;
Daemon* GpuTest::shared_ = nullptr;

// Stops the shared daemon once every suite has run.
class SharedDaemonEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { GpuTest::StopShared(); }
};
::testing::Environment* const kSharedDaemon =
    ::testing::AddGlobalTestEnvironment(new SharedDaemonEnvironment);

std::string Describe(const v1::CaseResult& c) {
  return std::string(v1::Variant_Name(c.variant())) + " " + v1::Mode_Name(c.mode()) + " " +
         v1::DType_Name(c.dtype()) + " " + v1::Pattern_Name(c.pattern()) +
         " m=" + std::to_string(c.m()) + " n=" + std::to_string(c.n()) + ": " +
         v1::CaseStatus_Name(c.status()) + " " + c.message();
}

struct MatrixParam {
  v1::DType dtype;
  v1::Pattern pattern;
};

struct Shapes {
  std::vector<uint32_t> m, n;
};

Shapes MatrixShapes() {
  if (Subset()) return {{1, 16, 64, 256}, {7168, 4096}};
  return {{1, 2, 3, 8, 16, 32, 64, 128, 256, 1024, 2048}, {2880, 4096, 7168, 8192}};
}

class GpuMatrixTest : public GpuTest, public ::testing::WithParamInterface<MatrixParam> {};

TEST_P(GpuMatrixTest, EveryVariantModeAndShapeIsOkOrUnsupported) {
  ASSERT_NE(daemon_, nullptr) << "colltestd --backend cuda did not start";
  v1::SweepSpec spec;
  SetGroup(spec);
  const Shapes shapes = MatrixShapes();
  for (uint32_t m : shapes.m) spec.add_m(m);
  for (uint32_t n : shapes.n) spec.add_n(n);
  spec.set_dtype(GetParam().dtype);
  spec.set_pattern(GetParam().pattern);
  for (auto v : {v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL, v1::VARIANT_LAMPORT,
                 v1::VARIANT_LAMPORT_TB, v1::VARIANT_LAMPORT_TWO_SHOT}) {
    spec.add_variants(v);
  }
  spec.add_modes(v1::MODE_EAGER);
  spec.add_modes(v1::MODE_GRAPH);
  spec.set_warmup(2);
  spec.set_iters(4);
  spec.set_tolerance(v1::TOLERANCE_STRICT);
  spec.set_timeout_ms(5000);
  const v1::RunResult r = Run(spec);
  ASSERT_EQ(r.cases_size(), static_cast<int>(shapes.m.size() * shapes.n.size() * 5 * 2))
      << r.message();
  int ok = 0, unsupported = 0;
  for (const v1::CaseResult& c : r.cases()) {
    if (c.status() == v1::CASE_STATUS_UNSUPPORTED) {
      ++unsupported;
      EXPECT_FALSE(c.message().empty()) << Describe(c);
      continue;
    }
    EXPECT_EQ(c.status(), v1::CASE_STATUS_OK) << Describe(c);
    if (GetParam().pattern == v1::PATTERN_INTEGERS) {
      EXPECT_EQ(c.diff().mismatches(), 0u) << Describe(c);
    }
    ++ok;
  }
  EXPECT_GT(ok, 0);
  RecordProperty("ok_cases", ok);
  RecordProperty("unsupported_cases", unsupported);
  RecordProperty("world", static_cast<int>(World()));
  RecordProperty("ranks_per_gpu", static_cast<int>(r.ranks_per_gpu()));
}

INSTANTIATE_TEST_SUITE_P(Matrix, GpuMatrixTest,
                         ::testing::Values(MatrixParam{v1::DTYPE_BF16, v1::PATTERN_INTEGERS},
                                           MatrixParam{v1::DTYPE_BF16, v1::PATTERN_NORMAL},
                                           MatrixParam{v1::DTYPE_BF16, v1::PATTERN_NEG_ZERO},
                                           MatrixParam{v1::DTYPE_FP16, v1::PATTERN_INTEGERS},
                                           MatrixParam{v1::DTYPE_FP16, v1::PATTERN_NORMAL},
                                           MatrixParam{v1::DTYPE_FP16, v1::PATTERN_NEG_ZERO},
                                           MatrixParam{v1::DTYPE_FP32, v1::PATTERN_INTEGERS},
                                           MatrixParam{v1::DTYPE_FP32, v1::PATTERN_NORMAL},
                                           MatrixParam{v1::DTYPE_FP32, v1::PATTERN_NEG_ZERO}),
                         [](const ::testing::TestParamInfo<MatrixParam>& i) {
                           return v1::DType_Name(i.param.dtype) + "_" +
                                  v1::Pattern_Name(i.param.pattern);
                         });

// The nccl variant: NCCL's all-reduce then our residual + RMSNorm kernel, checked by the same
// device reference. The reference sums in fp32 in rank order and rounds once; NCCL sums in its own
// order and may round to T between steps, so non-integer patterns are judged with the aiter
// profile (atol = rtol = 1e-2). Integer patterns are exact either way, so they stay strict. With
// ranks sharing a GPU every case is UNSUPPORTED: NCCL refuses two ranks on one device.
constexpr char kNcclRefusesSharing[] = "nccl: NCCL refuses two ranks on one GPU";

// The message starts with the refusal, after the "rank R: " that names the first rank to refuse
// in a merged case message (server/workers/verdict.cc GroupFailureSummary).
bool StartsWithRefusal(std::string message) {
  if (message.rfind("rank ", 0) == 0 && message.find(": ") != std::string::npos) {
    message = message.substr(message.find(": ") + 2);
  }
  return message.rfind(kNcclRefusesSharing, 0) == 0;
}

void ExpectNcclRefusesSharing(const v1::CaseResult& c) {
  EXPECT_EQ(c.status(), v1::CASE_STATUS_UNSUPPORTED) << Describe(c);
  EXPECT_TRUE(StartsWithRefusal(c.message())) << Describe(c);
}

class GpuNcclTest : public GpuTest, public ::testing::WithParamInterface<MatrixParam> {};

TEST_P(GpuNcclTest, NcclThenFusedNormIsOkInBothModes) {
  ASSERT_NE(daemon_, nullptr);
  v1::SweepSpec spec;
  SetGroup(spec);
  for (uint32_t m : {1, 3, 64, 1024}) spec.add_m(m);
  for (uint32_t n : {2880, 7168}) spec.add_n(n);
  spec.set_dtype(GetParam().dtype);
  spec.set_pattern(GetParam().pattern);
  spec.add_variants(v1::VARIANT_NCCL);
  spec.add_modes(v1::MODE_EAGER);
  spec.add_modes(v1::MODE_GRAPH);
  spec.set_warmup(2);
  spec.set_iters(4);
  const bool exact = GetParam().pattern == v1::PATTERN_INTEGERS;
  spec.set_tolerance(exact ? v1::TOLERANCE_STRICT : v1::TOLERANCE_AITER);
  spec.set_timeout_ms(5000);
  const v1::RunResult r = Run(spec);
  ASSERT_EQ(r.cases_size(), 4 * 2 * 2) << r.message();
  const bool shared = GroupSharesAGpu(*daemon_);
  RecordProperty("shared_gpu", shared ? "true" : "false");
  for (const v1::CaseResult& c : r.cases()) {
    if (shared) {
      ExpectNcclRefusesSharing(c);
      continue;
    }
    EXPECT_EQ(c.status(), v1::CASE_STATUS_OK) << Describe(c);
    if (exact) {
      EXPECT_EQ(c.diff().mismatches(), 0u) << Describe(c);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Nccl, GpuNcclTest,
                         ::testing::Values(MatrixParam{v1::DTYPE_BF16, v1::PATTERN_INTEGERS},
                                           MatrixParam{v1::DTYPE_BF16, v1::PATTERN_NORMAL},
                                           MatrixParam{v1::DTYPE_FP16, v1::PATTERN_NORMAL},
                                           MatrixParam{v1::DTYPE_FP32, v1::PATTERN_NORMAL}),
                         [](const ::testing::TestParamInfo<MatrixParam>& i) {
                           return v1::DType_Name(i.param.dtype) + "_" +
                                  v1::Pattern_Name(i.param.pattern);
                         });

// NCCL cannot time out a wait: a never-arriving rank must be refused up front, not hang the group.
TEST_F(GpuTest, NcclRefusesFaultInjection) {
  ASSERT_NE(daemon_, nullptr);
  v1::SweepSpec spec;
  SetGroup(spec);
  spec.add_m(8);
  spec.add_n(7168);
  spec.add_variants(v1::VARIANT_NCCL);
  spec.set_warmup(1);
  spec.set_iters(2);
  spec.set_timeout_ms(1000);
  spec.set_fault("missing_rank:1");
  const v1::RunResult r = Run(spec);
  ASSERT_EQ(r.cases_size(), 1) << r.message();
  EXPECT_EQ(r.cases(0).status(), v1::CASE_STATUS_UNSUPPORTED) << Describe(r.cases(0));
}

struct StressParam {
  v1::Variant variant;
  v1::Mode mode;
};

class GpuStressTest : public GpuTest, public ::testing::WithParamInterface<StressParam> {};

// 5000 calls with m changing every call, two_kernel and one_stage calls with other m and other data
// interleaved, every call checked: stale staging, lost re-arms and rotation bugs show here. Graph
// mode captures up to 64 such calls, each with its check, and replays them until 5000 have run.
TEST_P(GpuStressTest, FiveThousandCallsAllCorrect) {
  ASSERT_NE(daemon_, nullptr);
  v1::SweepSpec spec;
  SetGroup(spec);
  spec.add_m(256);
  spec.add_n(7168);
  spec.set_dtype(v1::DTYPE_BF16);
  spec.set_pattern(v1::PATTERN_NEG_ZERO);
  spec.add_variants(GetParam().variant);
  spec.add_modes(GetParam().mode);
  spec.set_stress_calls(5000);
  spec.set_timeout_ms(5000);
  const v1::RunResult r = Run(spec);
  ASSERT_EQ(r.cases_size(), 1) << r.message();
  const v1::CaseResult& c = r.cases(0);
  EXPECT_EQ(c.mode(), GetParam().mode) << Describe(c);
  EXPECT_EQ(c.status(), v1::CASE_STATUS_OK) << Describe(c);
  EXPECT_EQ(c.diff().mismatches(), 0u) << Describe(c);
  ASSERT_GT(c.ranks_size(), 0);
  for (const v1::RankResult& rank : c.ranks()) {
    // Every call counts, the interleaved ones too: at least the 5000 of the variant.
    EXPECT_GE(rank.calls(), 5000u) << rank.message();
    EXPECT_EQ(rank.diff().mismatches(), 0u) << rank.message();
    EXPECT_GT(rank.diff().checked(), 0u) << rank.message();
  }
  RecordProperty("calls", static_cast<int>(c.ranks(0).calls()));
  RecordProperty("checked", std::to_string(c.ranks(0).diff().checked()));
}

INSTANTIATE_TEST_SUITE_P(
    Lamport, GpuStressTest,
    ::testing::Values(StressParam{v1::VARIANT_LAMPORT, v1::MODE_EAGER},
                      StressParam{v1::VARIANT_LAMPORT, v1::MODE_GRAPH},
                      StressParam{v1::VARIANT_LAMPORT_TB, v1::MODE_EAGER},
                      StressParam{v1::VARIANT_LAMPORT_TB, v1::MODE_GRAPH},
                      StressParam{v1::VARIANT_LAMPORT_TWO_SHOT, v1::MODE_EAGER},
                      StressParam{v1::VARIANT_LAMPORT_TWO_SHOT, v1::MODE_GRAPH}),
    [](const ::testing::TestParamInfo<StressParam>& i) {
      return v1::Variant_Name(i.param.variant) + "_" + v1::Mode_Name(i.param.mode);
    });

// ---- Fault injection (docs/design.md section 7): the cpu backend's faults, names and meaning ----

constexpr uint32_t kFaultTimeoutMs = 1000;
// Past the timeout, so that the peer gives up first; one variant per mode, as the delayed rank's
// case lasts longer than the others (see FaultDetectBoundMs).
constexpr uint32_t kFaultDelayUs = (kFaultTimeoutMs + 200) * 1000;

struct FaultRow {
  std::string fault;
  v1::Variant variant;
  v1::Mode mode;
  v1::Pattern pattern;
  v1::CaseStatus expected;
  int culprit;           // the rank the result must name, -1 when the fault has none
  std::string evidence;  // without a culprit: text the case message must hold ("" for none)
};

constexpr v1::Variant kFused[] = {v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL,
                                  v1::VARIANT_LAMPORT, v1::VARIANT_LAMPORT_TB,
                                  v1::VARIANT_LAMPORT_TWO_SHOT};

std::string RankFault(const char* kind, int rank) {
  return std::string(kind) + ":" + std::to_string(rank);
}

std::string DelayFault(int rank) {
  return RankFault("delay_rank", rank) + ":" + std::to_string(kFaultDelayUs);
}

FaultRow Blame(const std::string& fault, v1::Variant v, v1::Mode mode, v1::CaseStatus expected,
               int rank) {
  return {fault, v, mode, v1::PATTERN_INTEGERS, expected, rank, ""};
}

// The faults that blame `rank` (the last one), with every variant where each variant's own
// protocol is what finds the fault. The subset (W = 4 and 8) drops the delay, which only repeats
// missing_rank's verdict a second later, and the second crash per mode.
void AddCulpritRows(std::vector<FaultRow>& rows, v1::Mode mode, int rank, bool subset) {
  const bool eager = mode == v1::MODE_EAGER;
  for (v1::Variant v : kFused) {
    rows.push_back(Blame(RankFault("missing_rank", rank), v, mode, v1::CASE_STATUS_HANG, rank));
  }
  if (!subset) {
    rows.push_back(Blame(DelayFault(rank), eager ? v1::VARIANT_ONE_STAGE : v1::VARIANT_LAMPORT,
                         mode, v1::CASE_STATUS_HANG, rank));
  }
  // Each crash costs a respawn of the group: two variants per mode, every variant once.
  std::vector<v1::Variant> crash =
      eager ? std::vector<v1::Variant>{v1::VARIANT_ONE_STAGE, v1::VARIANT_LAMPORT}
            : std::vector<v1::Variant>{v1::VARIANT_TWO_KERNEL, v1::VARIANT_LAMPORT_TB};
  if (subset) crash.resize(1);
  for (v1::Variant v : crash) {
    rows.push_back(Blame(RankFault("crash_rank", rank), v, mode, v1::CASE_STATUS_ERROR, rank));
  }
  for (v1::Variant v : kFused) {
    rows.push_back(Blame(RankFault("hang_end_sync", rank), v, mode, v1::CASE_STATUS_HANG, rank));
  }
  // A stopped worker process (its host thread stops inside the stream, graph replay included):
  // only the controller's heartbeat watchdog finds it. One variant per mode; each respawns.
  rows.push_back(Blame(RankFault("stall_rank", rank),
                       eager ? v1::VARIANT_LAMPORT : v1::VARIANT_ONE_STAGE, mode,
                       v1::CASE_STATUS_HANG, rank));
}

// Rank 0 as the culprit: whether the verdict names a rank that is not the last. One variant per
// fault kind and mode, spread over the variants, as each hang costs the timeout and each crash or
// stall a respawn.
void AddShortCulpritRows(std::vector<FaultRow>& rows, v1::Mode mode, int rank, bool subset) {
  const bool eager = mode == v1::MODE_EAGER;
  rows.push_back(Blame(RankFault("missing_rank", rank),
                       eager ? v1::VARIANT_LAMPORT_TWO_SHOT : v1::VARIANT_LAMPORT_TB, mode,
                       v1::CASE_STATUS_HANG, rank));
  if (!subset) {
    rows.push_back(Blame(DelayFault(rank), eager ? v1::VARIANT_ONE_STAGE : v1::VARIANT_LAMPORT,
                         mode, v1::CASE_STATUS_HANG, rank));
  }
  rows.push_back(Blame(RankFault("crash_rank", rank),
                       eager ? v1::VARIANT_LAMPORT_TB : v1::VARIANT_LAMPORT_TWO_SHOT, mode,
                       v1::CASE_STATUS_ERROR, rank));
  rows.push_back(Blame(RankFault("hang_end_sync", rank),
                       eager ? v1::VARIANT_LAMPORT : v1::VARIANT_TWO_KERNEL, mode,
                       v1::CASE_STATUS_HANG, rank));
  rows.push_back(Blame(RankFault("stall_rank", rank),
                       eager ? v1::VARIANT_LAMPORT : v1::VARIANT_ONE_STAGE, mode,
                       v1::CASE_STATUS_HANG, rank));
}

// As on the cpu backend, staging faults act only where their staging exists: skip_rearm and
// poison_staging on lamport (lamport_tb and lamport_two_shot clear whole buffers, they re-arm no
// consumed pack), skip_canonicalize on the three Lamport variants; elsewhere the case is simply
// OK. They have no culprit rank, so they run once.
void AddStagingRows(std::vector<FaultRow>& rows, v1::Mode mode) {
  for (v1::Variant v : kFused) {
    const bool lamport = v == v1::VARIANT_LAMPORT;
    for (const char* f : {"skip_rearm", "poison_staging"}) {
      rows.push_back({f, v, mode, v1::PATTERN_INTEGERS,
                      lamport ? v1::CASE_STATUS_WRONG : v1::CASE_STATUS_OK, -1,
                      lamport ? "outside tolerance" : ""});
    }
    const char* phase = lamport                             ? "lamport phase B"
                        : v == v1::VARIANT_LAMPORT_TB       ? "lamport_tb consume"
                        : v == v1::VARIANT_LAMPORT_TWO_SHOT ? "lamport_two_shot reduce"
                                                            : "";
    rows.push_back({"skip_canonicalize", v, mode, v1::PATTERN_NEG_ZERO,
                    *phase != 0 ? v1::CASE_STATUS_HANG : v1::CASE_STATUS_OK, -1, phase});
  }
}

// The last rank gets the full list of its kind of run, rank 0 the short one (unless
// COLLTEST_GPU_CULPRITS=last), the staging faults run once.
std::vector<FaultRow> FaultMatrix() {
  const int last = static_cast<int>(World()) - 1;
  const bool subset = Subset();
  const char* culprits = std::getenv("COLLTEST_GPU_CULPRITS");
  const bool rank_zero = culprits == nullptr || std::string(culprits) != "last";
  std::vector<FaultRow> rows;
  for (v1::Mode mode : {v1::MODE_EAGER, v1::MODE_GRAPH}) {
    AddCulpritRows(rows, mode, last, subset);
    if (!subset) AddStagingRows(rows, mode);
    if (rank_zero) AddShortCulpritRows(rows, mode, 0, subset);
  }
  return rows;
}

// Stress calls in both modes: the service runs at least one warm-up call, eagerly, before a graph
// is captured, and a per-call fault fired there would never reach the captured calls; stress in
// graph mode captures from the first call (64 calls, replayed). Every call is checked and stale
// staging races with the peers' fresh stores, so many calls make a WRONG certain; a hang or a
// crash ends the case at its first call, and a call that is OK takes microseconds.
v1::SweepSpec FaultSpec(const FaultRow& row, bool with_fault) {
  v1::SweepSpec spec;
  SetGroup(spec);
  spec.add_m(16);
  spec.add_n(7168);
  spec.set_dtype(v1::DTYPE_BF16);
  spec.set_pattern(row.pattern);
  spec.add_variants(row.variant);
  spec.add_modes(row.mode);
  spec.set_stress_calls(128);
  // Unused by stress, but counted in the controller's host deadline: keep them small.
  spec.set_warmup(1);
  spec.set_iters(1);
  spec.set_tolerance(v1::TOLERANCE_STRICT);
  spec.set_timeout_ms(kFaultTimeoutMs);
  if (with_fault) spec.set_fault(row.fault);
  return spec;
}

// A hang is reported within the timeout plus one second. The delayed rank is the exception: its
// peers give up at the timeout, but the case ends when it answers, after its own (cut short) delay
// and its own wait for the peers that left.
double FaultDetectBoundMs(const FaultRow& row) {
  const bool delayed = row.fault.rfind("delay_rank", 0) == 0;
  return kFaultTimeoutMs + 1000.0 + (delayed ? kFaultDelayUs / 1000.0 : 0.0);
}

bool CulpritNamed(const v1::CaseResult& c, const FaultRow& row) {
  if (row.culprit < 0) return c.message().find(row.evidence) != std::string::npos;
  const std::string name = "rank " + std::to_string(row.culprit);
  if (row.expected == v1::CASE_STATUS_ERROR) {
    return c.message().find(name + " (pid") != std::string::npos;
  }
  // Every other rank waited for the culprit, and the verdict says so.
  for (const v1::RankResult& r : c.ranks()) {
    if (static_cast<int>(r.rank()) != row.culprit && r.suspect_peer() != row.culprit) return false;
  }
  return c.message().find(name + " never arrived") != std::string::npos ||
         c.message().find("waited for " + name) != std::string::npos;
}

std::string Lower(std::string name, const std::string& prefix) {
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return name;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

struct FaultOutcome {
  FaultRow row;
  v1::CaseStatus status = v1::CASE_STATUS_UNSPECIFIED;
  bool named = false;
  double detect_ms = 0;
  double case_wall_ms = 0;
  bool next_ok = false;
  double next_case_ms = 0;
  std::string message;
};

// Rewritten after every row, so that a run cut short by the box's time limit still leaves a file.
// Each row carries the world and the culprit rank: the box script runs W = 2, 4 and 8.
void WriteFaultMatrix(const std::vector<FaultOutcome>& rows, bool shared_gpu) {
  const char* path = std::getenv("COLLTEST_FAULT_MATRIX_OUT");
  if (path == nullptr || *path == 0) return;
  std::ofstream out(path, std::ios::trunc);
  out << "{\"timeout_ms\": " << kFaultTimeoutMs << ", \"world\": " << World()
      << ", \"shared_gpu\": " << (shared_gpu ? "true" : "false") << ", \"rows\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const FaultOutcome& o = rows[i];
    out << (i == 0 ? "\n  " : ",\n  ") << "{\"fault\": " << JsonString(o.row.fault)
        << ", \"world\": " << World()
        << ", \"variant\": " << JsonString(Lower(v1::Variant_Name(o.row.variant), "VARIANT_"))
        << ", \"mode\": " << JsonString(Lower(v1::Mode_Name(o.row.mode), "MODE_"))
        << ", \"expected\": "
        << JsonString(Lower(v1::CaseStatus_Name(o.row.expected), "CASE_STATUS_"))
        << ", \"status\": " << JsonString(Lower(v1::CaseStatus_Name(o.status), "CASE_STATUS_"))
        << ", \"culprit\": " << (o.row.culprit < 0 ? "null" : std::to_string(o.row.culprit))
        << ", \"culprit_named\": "
        << (o.row.culprit < 0 && o.row.evidence.empty() ? "null"
            : o.named                                   ? "true"
                                                        : "false")
        << ", \"detect_ms\": " << o.detect_ms << ", \"case_wall_ms\": " << o.case_wall_ms
        << ", \"next_ok\": " << (o.next_ok ? "true" : "false")
        << ", \"next_case_ms\": " << o.next_case_ms << ", \"message\": " << JsonString(o.message)
        << "}";
  }
  out << "\n]}\n";
}

// A daemon of its own, so that a fault cannot leave state behind for other suites; the shared one
// is stopped first, as its warm workers would hold the same devices.
class GpuFaultTest : public GpuTest {
 protected:
  static void SetUpTestSuite() {
    StopShared();
    daemon_ = StartDaemon();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  // One RPC with a deadline of its own, timed around the call.
  v1::RunResult TimedRun(const v1::SweepSpec& spec, double* ms) {
    auto stub = daemon_->Stub();
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::RunRequest req;
    *req.mutable_spec() = spec;
    v1::RunResult result;
    const auto t0 = std::chrono::steady_clock::now();
    const grpc::Status s = stub->Run(&ctx, req, &result);
    *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(s.ok()) << s.error_message();
    return result;
  }

  // The faulty case, then the next case without fault on the same server.
  FaultOutcome RunRow(const FaultRow& row) {
    FaultOutcome o;
    o.row = row;
    const v1::RunResult r = TimedRun(FaultSpec(row, true), &o.detect_ms);
    if (r.cases_size() == 1) {
      const v1::CaseResult& c = r.cases(0);
      o.status = c.status();
      o.case_wall_ms = c.wall_ms();
      o.message = c.message();
      o.named = CulpritNamed(c, row);
      ExpectFaultVerdict(c, o);
    } else {
      ADD_FAILURE() << r.cases_size() << " cases: " << r.message();
    }
    const v1::RunResult next = TimedRun(FaultSpec(row, false), &o.next_case_ms);
    o.next_ok = next.cases_size() == 1 && next.cases(0).status() == v1::CASE_STATUS_OK;
    EXPECT_TRUE(o.next_ok) << (next.cases_size() == 1 ? Describe(next.cases(0)) : next.message());
    return o;
  }

  static void ExpectFaultVerdict(const v1::CaseResult& c, const FaultOutcome& o) {
    const FaultRow& row = o.row;
    EXPECT_EQ(c.status(), row.expected) << Describe(c);
    EXPECT_TRUE((row.culprit < 0 && row.evidence.empty()) || o.named) << Describe(c);
    EXPECT_LE(o.detect_ms, FaultDetectBoundMs(row)) << Describe(c);
    // A rank that left by fault says so itself, as on the cpu backend.
    for (const char* self : {"missing_rank", "hang_end_sync"}) {
      if (row.fault.rfind(self, 0) != 0) continue;
      for (const v1::RankResult& rank : c.ranks()) {
        if (static_cast<int>(rank.rank()) == row.culprit) {
          EXPECT_EQ(rank.phase(), std::string("fault: ") + self) << rank.ShortDebugString();
        }
      }
    }
  }
};

// Every fault x {eager, graph} x the variants it concerns, at W = COLLTEST_GPU_WORLD: the expected
// status, the culprit named (rank results and verdict), detection within the timeout plus one
// second, and the next case on the same server OK (after the controller's reset or respawn), timed.
TEST_F(GpuFaultTest, EveryFaultGivesItsFailureNamesTheCulpritAndTheGroupRecovers) {
  ASSERT_NE(daemon_, nullptr) << "colltestd --backend cuda did not start";
  const std::vector<FaultRow> matrix = FaultMatrix();
  const bool shared = GroupSharesAGpu(*daemon_);
  RecordProperty("world", static_cast<int>(World()));
  RecordProperty("rows", static_cast<int>(matrix.size()));
  // Start the workers first, so that no row's detection time includes their start.
  {
    double ms = 0;
    const v1::RunResult warm = TimedRun(FaultSpec(matrix.front(), false), &ms);
    ASSERT_EQ(warm.cases_size(), 1);
    ASSERT_EQ(warm.cases(0).status(), v1::CASE_STATUS_OK) << warm.cases(0).message();
  }
  std::vector<FaultOutcome> outcomes;
  for (const FaultRow& row : matrix) {
    SCOPED_TRACE(row.fault + " " + v1::Variant_Name(row.variant) + " " + v1::Mode_Name(row.mode) +
                 " W=" + std::to_string(World()));
    outcomes.push_back(RunRow(row));
    WriteFaultMatrix(outcomes, shared);
  }
}

}  // namespace
}  // namespace colltest::testing
