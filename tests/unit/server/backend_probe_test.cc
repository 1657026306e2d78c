#include "server/devices/backend_probe.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/server/test_capabilities.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

const std::string kTwoGpus = absl::StrCat(
    R"({"backend":"cuda","devices":[{"index":0,"name":"NVIDIA H200","memory_bytes":150000000000},)"
    R"({"index":1,"name":"NVIDIA H200","memory_bytes":150000000000}],"capabilities":)",
    testing::kGpuCapabilitiesJson, "}");

// What `colltest-worker --probe --backend cpu` prints (worker/app/main.cc).
const std::string kCpu = absl::StrCat(R"({"backend":"cpu","devices":[],"capabilities":)",
                                      testing::kCpuCapabilitiesJson, "}");

// The cpu backend as colltestd resolves it: its probe answer with `ranks` virtual devices.
BackendInfo CpuInfo(uint32_t ranks) {
  absl::StatusOr<BackendInfo> probed = ParseProbeOutput(kCpu);
  EXPECT_TRUE(probed.ok()) << probed.status();
  return WithVirtualDevices(*std::move(probed), ranks);
}

// What a worker with the machine-identity probe prints (worker/backends/gpu/gpu_backend.h).
const std::string kTwoGpusWithIdentity = absl::StrCat(
    R"({"backend":"cuda","devices":[{"index":0,"name":"NVIDIA H200","memory_bytes":150000000000,)"
    R"("uuid":"GPU-8d1f2a3b-0000-1111-2222-333344445555","pci_bus_id":"0000:19:00.0"},)"
    R"({"index":1,"name":"NVIDIA H200","memory_bytes":150000000000,)"
    R"("uuid":"GPU-8d1f2a3b-0000-1111-2222-333344446666","pci_bus_id":"0000:3b:00.0"}],)"
    R"("driver_version":"13.0","runtime_version":"13.0",)"
    R"("links":[{"a":0,"b":1,"p2p":true,"performance_rank":1,"native_atomics":true}],)",
    R"("capabilities":)", testing::kGpuCapabilitiesJson, "}");

ProbeFn Answer(absl::StatusOr<std::string> output) {
  return [output](const std::string&, const std::string&) { return output; };
}

// `auto_output` for --backend auto (and any other), the cpu backend's real line for cpu.
ProbeFn AnswerWithCpu(absl::StatusOr<std::string> auto_output) {
  return [auto_output](const std::string&, const std::string& backend) {
    return backend == "cpu" ? absl::StatusOr<std::string>(kCpu) : auto_output;
  };
}

TEST(BackendProbeTest, CpuBackendHasNamedRanks) {
  BackendInfo info = CpuInfo(3);
  EXPECT_EQ(info.backend, "cpu");
  ASSERT_EQ(info.devices.size(), 3u);
  EXPECT_EQ(info.devices[2].name(), "cpu rank 2");
  EXPECT_EQ(info.devices[2].index(), 2u);
}

TEST(BackendProbeTest, CpuBackendIdentity) {
  BackendInfo info = CpuInfo(3);
  const std::string host = HostName();
  EXPECT_FALSE(host.empty());
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(info.devices[i].uuid(), absl::StrCat("cpu-", host, "-", i));
    EXPECT_EQ(info.devices[i].backend(), "cpu");
    EXPECT_EQ(info.devices[i].pci_bus_id(), "");
  }
  // Every pair once, a < b, through shared memory.
  ASSERT_EQ(info.links.size(), 3u);
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (const v1::Link& l : info.links) {
    pairs.emplace_back(l.a(), l.b());
    EXPECT_TRUE(l.p2p());
    EXPECT_EQ(l.kind(), "shm");
  }
  EXPECT_THAT(pairs, ElementsAre(Pair(0u, 1u), Pair(0u, 2u), Pair(1u, 2u)));
  EXPECT_TRUE(CpuInfo(1).links.empty());
}

TEST(BackendProbeTest, ParsesTheIdentityFields) {
  auto info = ParseProbeOutput(absl::StrCat(kTwoGpusWithIdentity, "\n"));
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->devices.size(), 2u);
  EXPECT_EQ(info->devices[0].uuid(), "GPU-8d1f2a3b-0000-1111-2222-333344445555");
  EXPECT_EQ(info->devices[1].uuid(), "GPU-8d1f2a3b-0000-1111-2222-333344446666");
  EXPECT_EQ(info->devices[1].pci_bus_id(), "0000:3b:00.0");
  EXPECT_EQ(info->devices[1].memory_bytes(), 150000000000u);
  EXPECT_EQ(info->driver_version, "13.0");
  EXPECT_EQ(info->runtime_version, "13.0");
  ASSERT_EQ(info->links.size(), 1u);
  EXPECT_EQ(info->links[0].a(), 0u);
  EXPECT_EQ(info->links[0].b(), 1u);
  EXPECT_TRUE(info->links[0].p2p());
  EXPECT_EQ(info->links[0].performance_rank(), 1);
  EXPECT_TRUE(info->links[0].native_atomics());
  // A worker without serials and link kinds: no serial, and the kind its p2p flag implies.
  EXPECT_EQ(info->devices[0].serial(), "");
  EXPECT_EQ(info->links[0].kind(), "p2p");
  EXPECT_EQ(info->links[0].hops(), 0u);
  EXPECT_EQ(info->links[0].lanes(), 0u);
}

TEST(BackendProbeTest, ParsesSerialsAndLinkKinds) {
  auto info = ParseProbeOutput(
      R"({"backend":"cuda","devices":[{"index":0,"serial":"1654922003581"},{"index":1},)"
      R"({"index":2,"serial":""}],"links":[)"
      R"({"a":0,"b":1,"p2p":true,"kind":"nvlink","lanes":18},)"
      R"({"a":0,"b":2,"p2p":true,"kind":"xgmi","hops":2,"lanes":-1},)"
      R"({"a":1,"b":2,"p2p":false},)"
      R"({"a":0,"b":3,"p2p":true,"kind":"pcie","hops":4294967296}],"capabilities":{}})");
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->devices.size(), 3u);
  EXPECT_EQ(info->devices[0].serial(), "1654922003581");
  EXPECT_EQ(info->devices[1].serial(), "");
  ASSERT_EQ(info->links.size(), 4u);
  EXPECT_EQ(info->links[0].kind(), "nvlink");
  EXPECT_EQ(info->links[0].lanes(), 18u);
  EXPECT_EQ(info->links[0].hops(), 0u);
  EXPECT_EQ(info->links[1].kind(), "xgmi");
  EXPECT_EQ(info->links[1].hops(), 2u);
  EXPECT_EQ(info->links[1].lanes(), 0u);  // not a count: unknown
  EXPECT_EQ(info->links[2].kind(), "none");
  EXPECT_EQ(info->links[3].kind(), "pcie");
  EXPECT_EQ(info->links[3].hops(), 0u);  // beyond 32 bits: unknown
}

TEST(BackendProbeTest, OldProbeOutputStillParses) {
  auto info = ParseProbeOutput(kTwoGpus);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->devices.size(), 2u);
  EXPECT_EQ(info->devices[0].uuid(), "");
  EXPECT_EQ(info->devices[0].pci_bus_id(), "");
  EXPECT_EQ(info->driver_version, "");
  EXPECT_EQ(info->runtime_version, "");
  EXPECT_TRUE(info->links.empty());
}

TEST(BackendProbeTest, MalformedIdentityFieldsAreEmptyNotErrors) {
  auto info = ParseProbeOutput(
      R"({"backend":"hip","devices":[{"index":0,"uuid":7,"pci_bus_id":null}],)"
      R"("driver_version":50221153,"links":[{"a":0},"x",{"a":0,"b":1,"p2p":"yes"}],)"
      R"("capabilities":{}})");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->devices[0].uuid(), "");
  EXPECT_EQ(info->devices[0].pci_bus_id(), "");
  EXPECT_EQ(info->driver_version, "");
  ASSERT_EQ(info->links.size(), 1u);  // the two entries without both indices are dropped
  EXPECT_FALSE(info->links[0].p2p());
  EXPECT_EQ(info->links[0].performance_rank(), 0);
}

TEST(BackendProbeTest, DevicesFlagKeepsOnlyTheirLinks) {
  auto info = ResolveBackend("cpu", 4, {3, 1}, "w", Answer(kCpu));
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->links.size(), 1u);
  EXPECT_EQ(info->links[0].a(), 1u);
  EXPECT_EQ(info->links[0].b(), 3u);
  info = ResolveBackend("cuda", 4, {1}, "w", Answer(kTwoGpusWithIdentity));
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->links.empty());
  EXPECT_EQ(info->driver_version, "13.0");
}

TEST(BackendProbeTest, ParsesTheProbeLine) {
  auto info = ParseProbeOutput(absl::StrCat("some log line\n", kTwoGpus, "\n"));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->backend, "cuda");
  ASSERT_EQ(info->devices.size(), 2u);
  EXPECT_EQ(info->devices[1].index(), 1u);
  EXPECT_EQ(info->devices[1].name(), "NVIDIA H200");
  EXPECT_EQ(info->devices[1].memory_bytes(), 150000000000u);
  EXPECT_EQ(info->devices[1].backend(), "cuda");
  EXPECT_FALSE(ParseProbeOutput("no json here").ok());
  EXPECT_FALSE(ParseProbeOutput(R"({"backend":"opencl"})").ok());
}

TEST(BackendProbeTest, AutoUsesGpusWhenFound) {
  auto info = ResolveBackend("auto", 4, {}, "w", Answer(kTwoGpus));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->backend, "cuda");
  EXPECT_EQ(info->devices.size(), 2u);
}

TEST(BackendProbeTest, AutoFallsBackToCpu) {
  for (const auto& answer :
       {AnswerWithCpu(absl::DeadlineExceededError("the GPU probe hung")), Answer(kCpu),
        AnswerWithCpu(absl::StrCat(R"({"backend":"cuda","devices":[],"capabilities":)",
                                   testing::kGpuCapabilitiesJson, "}"))}) {
    auto info = ResolveBackend("auto", 4, {}, "w", answer);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->backend, "cpu");
    EXPECT_EQ(info->devices.size(), 4u);
    EXPECT_THAT(info->note, HasSubstr("cpu"));
    EXPECT_FALSE(info->capabilities.reports_devices());
    EXPECT_EQ(info->capabilities.variants_size(), 4);
  }
  // Without the cpu backend's own answer there is nothing to serve.
  EXPECT_FALSE(ResolveBackend("auto", 4, {}, "w", Answer(absl::NotFoundError("no worker"))).ok());
}

TEST(BackendProbeTest, ExplicitGpuBackendMustExist) {
  auto info = ResolveBackend("hip", 4, {}, "w", Answer(kTwoGpus));
  ASSERT_FALSE(info.ok());
  EXPECT_THAT(std::string(info.status().message()), HasSubstr("no hip device"));
  EXPECT_FALSE(ResolveBackend("cuda", 4, {}, "w", Answer(absl::NotFoundError("x"))).ok());
  EXPECT_TRUE(ResolveBackend("cuda", 4, {}, "w", Answer(kTwoGpus)).ok());
}

TEST(BackendProbeTest, CpuIsProbedForItsCapabilities) {
  std::vector<std::string> asked;
  auto info = ResolveBackend("cpu", 6, {}, "w", [&](const std::string&, const std::string& b) {
    asked.push_back(b);
    return absl::StatusOr<std::string>(kCpu);
  });
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_THAT(asked, ElementsAre("cpu"));
  EXPECT_EQ(info->devices.size(), 6u);
  EXPECT_EQ(info->capabilities.SerializeAsString(), testing::CpuCapabilities().SerializeAsString());
  EXPECT_FALSE(ResolveBackend("cpu", 6, {}, "w", Answer(absl::NotFoundError("no worker"))).ok());
}

TEST(BackendProbeTest, ParsesTheCapabilities) {
  auto gpu = ParseProbeOutput(kTwoGpus);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ(gpu->capabilities.SerializeAsString(), testing::GpuCapabilities().SerializeAsString());
  // Unknown variant names (a newer worker's) are left out; a line without capabilities is refused.
  auto odd = ParseProbeOutput(
      R"({"backend":"cpu","capabilities":{"variants":["lamport","turbo",7],"graph_mode":true}})");
  ASSERT_TRUE(odd.ok()) << odd.status();
  EXPECT_THAT(odd->capabilities.variants(), ElementsAre(v1::VARIANT_LAMPORT));
  EXPECT_TRUE(odd->capabilities.graph_mode());
  EXPECT_FALSE(odd->capabilities.reports_devices());
  auto none = ParseProbeOutput(R"({"backend":"cuda","devices":[{"index":0}]})");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("no capabilities"));
}

// Virtual devices follow the capabilities, never the name: a backend called cuda that announces
// no devices of its own runs on --cpu-ranks virtual ones, as the cpu backend does.
TEST(BackendProbeTest, ABackendWithoutDevicesOfItsOwnGetsVirtualOnesWhateverItsName) {
  const std::string virtual_cuda = absl::StrCat(R"({"backend":"cuda","devices":[],"capabilities":)",
                                                testing::kCpuCapabilitiesJson, "}");
  auto info = ResolveBackend("cuda", 3, {}, "w", Answer(virtual_cuda));
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->devices.size(), 3u);
  EXPECT_EQ(info->devices[1].name(), "cuda rank 1");
  EXPECT_EQ(info->links.size(), 3u);
  // And a "cpu" that announces real devices must find some.
  const std::string real_cpu = absl::StrCat(R"({"backend":"cpu","devices":[],"capabilities":)",
                                            testing::kGpuCapabilitiesJson, "}");
  EXPECT_FALSE(ResolveBackend("cpu", 3, {}, "w", Answer(real_cpu)).ok());
}

TEST(BackendProbeTest, DevicesFlagRestricts) {
  auto info = ResolveBackend("cpu", 4, {3, 1}, "w", Answer(kCpu));
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->devices.size(), 2u);
  EXPECT_EQ(info->devices[0].index(), 1u);
  EXPECT_EQ(info->devices[1].index(), 3u);
  info = ResolveBackend("cpu", 4, {7}, "w", Answer(kCpu));
  ASSERT_FALSE(info.ok());
  EXPECT_THAT(std::string(info.status().message()), HasSubstr("--devices 7: no such cpu device"));
}

class RunProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/colltest-probe-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  std::string Script(const std::string& body) {
    const std::string path = dir_ + "/worker";
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    chmod(path.c_str(), 0755);
    return path;
  }

  std::string dir_;
};

TEST_F(RunProbeTest, ReadsTheWorkersAnswer) {
  const std::string worker =
      Script(R"(test "$1 $2 $3" = "--probe --backend auto" || exit 3; echo '{"backend":"cpu"}')");
  auto out = RunProbe(worker, "auto", absl::Seconds(10));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(*out, HasSubstr(R"({"backend":"cpu"})"));
}

TEST_F(RunProbeTest, Failures) {
  EXPECT_FALSE(RunProbe(dir_ + "/missing", "auto", absl::Seconds(10)).ok());
  auto out = RunProbe(Script("exit 4"), "auto", absl::Seconds(10));
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("exit status 4"));
  out = RunProbe(Script("exec sleep 30"), "auto", absl::Milliseconds(200));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace colltest::server
