#include "server/devices/concurrency_check.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/server/test_capabilities.h"

namespace colltest::server {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// What `colltest-worker --concurrency-probe` prints (worker/backends/gpu/concurrency_probe.h).
constexpr char kConcurrent[] =
    R"({"concurrent":true,"round_trip_us":0.81,"round_trips":1000,"elapsed_ms":0.83})";
constexpr char kTimeSliced[] =
    R"({"concurrent":false,"round_trip_us":4482.13,"round_trips":22,"elapsed_ms":100.02})";
constexpr char kNoRoundTrip[] =
    R"({"concurrent":false,"round_trips":0,"elapsed_ms":400.00,)"
    R"("note":"the second process's kernel never answered the first ping"})";
constexpr char kProbeError[] =
    R"json({"concurrent":false,"error":"cudaIpcOpenMemHandle: invalid argument (second process)"})json";

// Two H200s as colltestd resolves them, with `ranks_per_gpu` slots each (WithSlotsPerGpu).
BackendInfo TwoGpus(uint32_t ranks_per_gpu) {
  BackendInfo info;
  info.backend = "cuda";
  info.capabilities = testing::GpuCapabilities();
  for (uint32_t i = 0; i < 2; ++i) {
    colltest::v1::Device& d = info.devices.emplace_back();
    d.set_index(i);
    d.set_physical_index(i);
    d.set_name("NVIDIA H200");
    d.set_backend("cuda");
  }
  absl::StatusOr<BackendInfo> slots = WithSlotsPerGpu(std::move(info), ranks_per_gpu);
  EXPECT_TRUE(slots.ok()) << slots.status();
  return *std::move(slots);
}

// A probe that answers `output` and records what it was asked.
struct FakeProbe {
  explicit FakeProbe(absl::StatusOr<std::string> answer) : output(std::move(answer)) {}

  absl::StatusOr<std::string> output;
  std::vector<std::string> calls;  // "worker backend device"

  ConcurrencyProbeFn Fn() {
    return [this](const std::string& worker, const std::string& backend, uint32_t device) {
      calls.push_back(absl::StrCat(worker, " ", backend, " ", device));
      return output;
    };
  }
};

TEST(ConcurrencyCheckTest, ConcurrentKernelsStartWithAnInfoVerdict) {
  FakeProbe probe(kConcurrent);
  absl::StatusOr<ConcurrencyVerdict> v = CheckConcurrentKernels(TwoGpus(4), false, "w", probe.Fn());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->checked);
  EXPECT_FALSE(v->time_sliced);
  EXPECT_DOUBLE_EQ(v->round_trip_us, 0.81);
  EXPECT_EQ(v->device, 0u);
  EXPECT_THAT(v->summary, AllOf(HasSubstr("run concurrently"), HasSubstr("0.81 us")));
  // The first GPU, by the runtime's own index, on the resolved backend.
  EXPECT_EQ(probe.calls, std::vector<std::string>{"w cuda 0"});
}

TEST(ConcurrencyCheckTest, ProbesThePhysicalIndexOfTheFirstDevice) {
  BackendInfo info = TwoGpus(2);
  for (colltest::v1::Device& d : info.devices) d.set_physical_index(d.physical_index() + 3);
  FakeProbe probe(kConcurrent);
  ASSERT_TRUE(CheckConcurrentKernels(info, false, "w", probe.Fn()).ok());
  EXPECT_EQ(probe.calls, std::vector<std::string>{"w cuda 3"});
}

TEST(ConcurrencyCheckTest, TimeSlicedKernelsAreRefusedWithTheWayToMps) {
  FakeProbe probe(kTimeSliced);
  absl::StatusOr<ConcurrencyVerdict> v = CheckConcurrentKernels(TwoGpus(4), false, "w", probe.Fn());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(
      v.status().message(),
      AllOf(HasSubstr("--ranks-per-gpu 4"), HasSubstr("GPU 0 (NVIDIA H200)"),
            HasSubstr("time-sliced"), HasSubstr("4482.13 us"), HasSubstr("MPS"),
            HasSubstr("nvidia-cuda-mps-control -d"), HasSubstr("CUDA_MPS_PIPE_DIRECTORY"),
            HasSubstr("CUDA_MPS_LOG_DIRECTORY"), HasSubstr("as root"),
            HasSubstr("echo quit | nvidia-cuda-mps-control"), HasSubstr("--allow-time-slicing"),
            HasSubstr("--ranks-per-gpu 1"), HasSubstr("docs/shared-gpu.md")));
}

TEST(ConcurrencyCheckTest, NoRoundTripAtAllIsTimeSliced) {
  FakeProbe probe(kNoRoundTrip);
  absl::StatusOr<ConcurrencyVerdict> v = CheckConcurrentKernels(TwoGpus(2), false, "w", probe.Fn());
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(),
              AllOf(HasSubstr("time-sliced"), HasSubstr("no flag round trip"),
                    HasSubstr("never answered the first ping"), HasSubstr("MPS")));
}

TEST(ConcurrencyCheckTest, TimeSlicedKernelsStartWhenAllowed) {
  FakeProbe probe(kTimeSliced);
  absl::StatusOr<ConcurrencyVerdict> v = CheckConcurrentKernels(TwoGpus(4), true, "w", probe.Fn());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->checked);
  EXPECT_TRUE(v->time_sliced);
  EXPECT_DOUBLE_EQ(v->round_trip_us, 4482.13);
  EXPECT_THAT(v->summary, AllOf(HasSubstr("--allow-time-slicing"), HasSubstr("time-sliced"),
                                HasSubstr("4482.13 us"), HasSubstr("MPS")));
}

TEST(ConcurrencyCheckTest, AProbeErrorIsRefusedNamingTheError) {
  FakeProbe probe(kProbeError);
  absl::StatusOr<ConcurrencyVerdict> v = CheckConcurrentKernels(TwoGpus(2), false, "w", probe.Fn());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(v.status().message(),
              AllOf(HasSubstr("cannot tell"), HasSubstr("cudaIpcOpenMemHandle: invalid argument"),
                    HasSubstr("--allow-time-slicing"), HasSubstr("MPS")));
}

TEST(ConcurrencyCheckTest, AWorkerThatFailsOrPrintsNothingReadableIsAnError) {
  for (absl::StatusOr<std::string> output :
       {absl::StatusOr<std::string>(absl::DeadlineExceededError("w did not answer within 5s")),
        absl::StatusOr<std::string>("not json\n"),
        absl::StatusOr<std::string>(R"({"backend":"cuda"})")}) {
    FakeProbe probe(output);
    absl::StatusOr<ConcurrencyVerdict> v =
        CheckConcurrentKernels(TwoGpus(2), false, "w", probe.Fn());
    ASSERT_FALSE(v.ok());
    EXPECT_THAT(v.status().message(), AllOf(HasSubstr("the probe failed"), HasSubstr("MPS")));
  }
}

TEST(ConcurrencyCheckTest, AProbeErrorCountsAsTimeSlicedWhenAllowed) {
  FakeProbe probe(kProbeError);
  absl::StatusOr<ConcurrencyVerdict> v = CheckConcurrentKernels(TwoGpus(2), true, "w", probe.Fn());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->time_sliced);
  EXPECT_EQ(v->round_trip_us, 0);
  EXPECT_THAT(v->summary, AllOf(HasSubstr("cudaIpcOpenMemHandle"), HasSubstr("time-sliced")));
}

TEST(ConcurrencyCheckTest, OneRankPerGpuNeverProbes) {
  FakeProbe probe(kTimeSliced);
  for (bool allow : {false, true}) {
    absl::StatusOr<ConcurrencyVerdict> v =
        CheckConcurrentKernels(TwoGpus(1), allow, "w", probe.Fn());
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_FALSE(v->checked);
    EXPECT_FALSE(v->time_sliced);
  }
  EXPECT_TRUE(probe.calls.empty());
}

TEST(ConcurrencyCheckTest, ParsesTheCpuBackendsAnswer) {
  absl::StatusOr<ConcurrencyProbeResult> r = ParseConcurrencyProbe(
      "log line\n{\"concurrent\":true,\"note\":\"cpu backend: no device\"}\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->concurrent);
  EXPECT_EQ(r->note, "cpu backend: no device");
  EXPECT_EQ(r->round_trips, 0u);
}

}  // namespace
}  // namespace colltest::server
