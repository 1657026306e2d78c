// colltestd --ranks-per-gpu on a GPU whose processes' kernels are time-sliced (NVIDIA without MPS),
// without a GPU: a fake worker (a shell script written here) answers the backend probe with one
// cuda GPU and the concurrency probe with a time-sliced round trip. colltestd must refuse to start,
// saying how to get concurrent kernels; with --allow-time-slicing it serves the GPU's slots.
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace v1 = ::colltest::v1;

constexpr char kFakeUuid[] = "GPU-fa4e0000-1111-2222-3333-444455556666";

// A colltest-worker stand-in. It records the arguments of every concurrency probe next to itself.
std::string FakeWorkerScript() {
  return std::string(R"(#!/bin/sh
# A colltest-worker stand-in: one cuda GPU whose processes' kernels are time-sliced (no MPS).
args="$*"
mode=
backend=cpu
while [ $# -gt 0 ]; do
  case "$1" in
    --probe) mode=probe ;;
    --concurrency-probe) mode=concurrency ;;
    --backend) backend="$2"; shift ;;
  esac
  shift
done
case "$mode" in
  probe)
    if [ "$backend" != cuda ]; then
      echo '{"backend":"none","error":"backend '"$backend"' is not built in"}'
      exit 1
    fi
    echo '{"backend":"cuda","devices":[{"index":0,"name":"Fake H200","memory_bytes":150000000000,)"
                     R"("uuid":")") +
         kFakeUuid +
         R"(","pci_bus_id":"0000:19:00.0","serial":"1654922003581"}],)"
         R"("driver_version":"13.0","runtime_version":"13.0","links":[],)"
         R"("capabilities":{"variants":["one_stage","lamport"],)"
         R"("uses_shared_memory_segments":false,"graph_mode":true,)"
         R"("reports_devices":true}}'
    ;;
  concurrency)
    echo "$args" >> "$(dirname "$0")/concurrency-probe.args"
    echo '{"concurrent":false,"round_trip_us":4482.13,"round_trips":22,"elapsed_ms":100.02}'
    ;;
  *)
    echo "fake worker: unexpected arguments: $args" >&2
    exit 2
    ;;
esac
)";
}

std::string ColltestdPath() {
  // COLLTEST_BIN_DIR overrides the build tree's bin/, as in Daemon::StartWithBackend.
  const char* dir = std::getenv("COLLTEST_BIN_DIR");
  return (dir != nullptr ? std::string(dir) : BinDir()) + "/colltestd";
}

class SharedGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/shared_gpu-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    worker_ = dir_ + "/fake-gpu-worker";
    std::ofstream(worker_) << FakeWorkerScript();
    ASSERT_EQ(chmod(worker_.c_str(), 0755), 0);
    std::filesystem::create_directory(dir_ + "/state");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The arguments the concurrency probe was run with, one line per run.
  std::string ProbeArgs() const {
    std::ifstream f(dir_ + "/concurrency-probe.args");
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

  std::string dir_;
  std::string worker_;
};

TEST_F(SharedGpuTest, TimeSlicedKernelsAreRefusedWithTheWayToMps) {
  // `timeout`: were the refusal gone, colltestd would serve until killed; the bound is generous
  // (the refusal comes after two runs of a shell script) and only ends a run that already failed.
  const auto [rc, output] =
      RunCommand({"timeout", "60", ColltestdPath(), "--backend", "cuda", "--ranks-per-gpu", "4",
                  "--worker", worker_, "--listen", "127.0.0.1:0", "--state-dir", dir_ + "/state"});
  EXPECT_NE(rc, 0) << output;
  EXPECT_NE(rc, 124) << "colltestd kept running although kernels are time-sliced:\n" << output;
  EXPECT_EQ(output.find("listening on"), std::string::npos) << output;
  for (const char* needle :
       {"time-sliced", "4482.13 us", "MPS", "nvidia-cuda-mps-control -d", "CUDA_MPS_PIPE_DIRECTORY",
        "--allow-time-slicing", "--ranks-per-gpu 1", "docs/shared-gpu.md"}) {
    EXPECT_NE(output.find(needle), std::string::npos) << "no \"" << needle << "\" in:\n" << output;
  }
  EXPECT_EQ(ProbeArgs(), "--concurrency-probe --backend cuda --device 0\n");
}

TEST_F(SharedGpuTest, AllowedTimeSlicingServesEverySlotOfTheGpu) {
  auto d = Daemon::StartWithBackend(
      "cuda", {"--ranks-per-gpu", "4", "--worker", worker_, "--allow-time-slicing"});
  ASSERT_NE(d, nullptr) << "colltestd did not start with --allow-time-slicing";
  EXPECT_EQ(ProbeArgs(), "--concurrency-probe --backend cuda --device 0\n");

  grpc::ClientContext context;
  v1::ListDevicesResponse devices;
  const grpc::Status status = d->Stub()->ListDevices(&context, {}, &devices);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(devices.backend(), "cuda");
  ASSERT_EQ(devices.devices_size(), 4);
  for (int i = 0; i < devices.devices_size(); ++i) {
    const v1::Device& device = devices.devices(i);
    EXPECT_EQ(device.index(), static_cast<uint32_t>(i));
    EXPECT_EQ(device.uuid(), kFakeUuid);
    EXPECT_EQ(device.physical_index(), 0u);
    EXPECT_EQ(device.slot(), static_cast<uint32_t>(i));
  }
  // Every pair of the four slots, all on the one GPU.
  ASSERT_EQ(devices.machine().links_size(), 6);
  for (const v1::Link& link : devices.machine().links()) {
    EXPECT_EQ(link.kind(), "same_gpu") << link.a() << "-" << link.b();
  }
  EXPECT_EQ(devices.machine().ranks_per_gpu(), 4u);
}

}  // namespace
}  // namespace colltest::testing
