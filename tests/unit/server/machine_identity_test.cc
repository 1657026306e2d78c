#include "server/devices/machine_identity.h"

#include <sys/utsname.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/build_info.h"
#include "server/devices/backend_probe.h"
#include "tests/unit/server/test_capabilities.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;

v1::MachineIdentity TwoGpuMachine() {
  v1::MachineIdentity m;
  m.set_hostname("gpu-box-1");
  m.set_backend("cuda");
  for (uint32_t i = 0; i < 2; ++i) {
    v1::Device& d = *m.add_devices();
    d.set_index(i);
    d.set_name("NVIDIA H200");
    d.set_uuid(i == 0 ? "GPU-00000000-0000-0000-0000-000000000001"
                      : "GPU-00000000-0000-0000-0000-000000000002");
    d.set_pci_bus_id(i == 0 ? "0000:19:00.0" : "0000:3b:00.0");
    d.set_memory_bytes(150000000000u);
  }
  m.set_driver_version("13.0");
  m.set_runtime_version("13.0");
  m.set_colltest_version("0.9.0");
  m.set_build_commit("0123456789ab");
  return m;
}

// The cpu backend as colltestd resolves it: its probe answer with `ranks` virtual devices.
BackendInfo CpuInfo(uint32_t ranks) {
  BackendInfo probed;
  probed.backend = "cpu";
  probed.capabilities = testing::CpuCapabilities();
  return WithVirtualDevices(std::move(probed), ranks);
}

BackendInfo TwoGpuInfo() {
  BackendInfo info;
  info.backend = "cuda";
  info.capabilities = testing::GpuCapabilities();
  const v1::MachineIdentity machine = TwoGpuMachine();
  for (const v1::Device& d : machine.devices()) info.devices.push_back(d);
  info.driver_version = "13.0";
  info.runtime_version = "12.8";
  v1::Link& l = info.links.emplace_back();
  l.set_a(0);
  l.set_b(1);
  l.set_p2p(true);
  l.set_performance_rank(1);
  l.set_native_atomics(true);
  return info;
}

// Baselines are found by key: a change of the hash, its field order or its framing orphans every
// stored baseline, so it must be a deliberate change of this literal (an FNV-1a 64 of
// "9:gpu-box-1" "4:cuda" "11:NVIDIA H200" "40:GPU-...01" "11:NVIDIA H200" "40:GPU-...02").
TEST(MachineIdentityTest, KeyIsPinned) {
  EXPECT_EQ(MachineKey(TwoGpuMachine()), "70f239823b92f8b4");
  EXPECT_EQ(MachineKey(TwoGpuMachine()), MachineKey(TwoGpuMachine()));
}

TEST(MachineIdentityTest, KeyNamesTheHardware) {
  const std::string key = MachineKey(TwoGpuMachine());
  v1::MachineIdentity m = TwoGpuMachine();
  m.mutable_devices(1)->set_uuid("GPU-00000000-0000-0000-0000-000000000003");
  EXPECT_NE(MachineKey(m), key) << "another GPU";
  m = TwoGpuMachine();
  m.set_hostname("gpu-box-2");
  EXPECT_NE(MachineKey(m), key) << "another host";
  m = TwoGpuMachine();
  m.mutable_devices(0)->set_name("NVIDIA B200");
  EXPECT_NE(MachineKey(m), key) << "another model";
  m = TwoGpuMachine();
  m.set_backend("hip");
  EXPECT_NE(MachineKey(m), key) << "another backend";
  m = TwoGpuMachine();
  m.mutable_devices()->RemoveLast();
  EXPECT_NE(MachineKey(m), key) << "fewer devices";
}

TEST(MachineIdentityTest, KeyFieldsAreFramed) {
  v1::MachineIdentity a, b;
  a.set_hostname("ab");
  a.set_backend("c");
  b.set_hostname("a");
  b.set_backend("bc");
  EXPECT_NE(MachineKey(a), MachineKey(b));
}

// A baseline stays comparable across driver, runtime and colltest upgrades (compare shows both
// sides' versions); what only describes the run or the topology does not rename the machine.
TEST(MachineIdentityTest, KeyIgnoresVersionsAndDetails) {
  const std::string key = MachineKey(TwoGpuMachine());
  v1::MachineIdentity m = TwoGpuMachine();
  m.set_driver_version("13.1");
  m.set_runtime_version("13.1");
  m.set_colltest_version("1.0.0");
  m.set_build_commit("ba9876543210-dirty");
  m.mutable_devices(0)->set_memory_bytes(1);
  m.mutable_devices(0)->set_pci_bus_id("0000:aa:00.0");
  m.add_links()->set_p2p(true);
  m.set_key("stale");
  EXPECT_EQ(MachineKey(m), key);
}

TEST(MachineIdentityTest, KeyFollowsIndexNotListOrder) {
  v1::MachineIdentity m = TwoGpuMachine();
  m.mutable_devices()->SwapElements(0, 1);
  EXPECT_EQ(MachineKey(m), MachineKey(TwoGpuMachine()));
}

// The probe's own word on the link (NVML, hipExtGetLinkTypeAndHopCount) is what `devices` and
// the long health level key their figures by: it must not be replaced by p2p/none.
TEST(MachineIdentityTest, KeepsTheLinkKindTheProbeNamed) {
  BackendInfo info = TwoGpuInfo();
  info.links[0].set_kind("nvlink");
  info.links[0].set_lanes(18);
  const v1::MachineIdentity m = BuildMachineIdentity(info, "0.9.0", "0123456789ab");
  ASSERT_EQ(m.links_size(), 1);
  EXPECT_EQ(m.links(0).kind(), "nvlink");
  EXPECT_EQ(m.links(0).lanes(), 18u);
}

TEST(MachineIdentityTest, BuildsAGpuIdentity) {
  BackendInfo info = TwoGpuInfo();
  info.devices[1].clear_backend();
  v1::Link& none = info.links.emplace_back();
  none.set_a(0);
  none.set_b(2);
  const v1::MachineIdentity m = BuildMachineIdentity(info, "0.9.0", "0123456789ab");
  EXPECT_EQ(m.hostname(), HostName());
  EXPECT_EQ(m.backend(), "cuda");
  ASSERT_EQ(m.devices_size(), 2);
  EXPECT_EQ(m.devices(1).backend(), "cuda");
  EXPECT_EQ(m.devices(1).pci_bus_id(), "0000:3b:00.0");
  EXPECT_EQ(m.driver_version(), "13.0");
  EXPECT_EQ(m.runtime_version(), "12.8");
  ASSERT_EQ(m.links_size(), 2);
  EXPECT_EQ(m.links(0).kind(), "p2p");
  EXPECT_EQ(m.links(0).performance_rank(), 1);
  EXPECT_TRUE(m.links(0).native_atomics());
  EXPECT_EQ(m.links(1).kind(), "none");
  EXPECT_EQ(m.colltest_version(), "0.9.0");
  EXPECT_EQ(m.build_commit(), "0123456789ab");
  EXPECT_EQ(m.key(), MachineKey(m));
  EXPECT_THAT(m.key(), ::testing::MatchesRegex("[0-9a-f]{16}"));
}

// colltestd --hostname: the name reported, and the key of the machine's history, are the node's
// (a pod's own name changes with every restart).
TEST(MachineIdentityTest, AGivenHostNameIsReportedAndKeysTheMachine) {
  BackendInfo info = TwoGpuInfo();
  const std::string own = BuildMachineIdentity(info, "0.9.0", "0123456789ab").key();
  info.hostname = "gpu-node-17";
  const v1::MachineIdentity m = BuildMachineIdentity(info, "0.9.0", "0123456789ab");
  EXPECT_EQ(m.hostname(), "gpu-node-17");
  EXPECT_NE(m.key(), own);
  EXPECT_EQ(m.key(), MachineKey(m));
}

TEST(MachineIdentityTest, UpgradesKeepTheKey) {
  BackendInfo info = TwoGpuInfo();
  const std::string key = BuildMachineIdentity(info, "0.9.0", "0123456789ab").key();
  info.driver_version = "13.1";
  info.runtime_version = "13.1";
  EXPECT_EQ(BuildMachineIdentity(info, "1.0.0", "ba9876543210").key(), key);
  info.devices[0].set_uuid("GPU-00000000-0000-0000-0000-000000000009");
  EXPECT_NE(BuildMachineIdentity(info, "1.0.0", "ba9876543210").key(), key);
}

TEST(MachineIdentityTest, BuildsACpuIdentity) {
  const v1::MachineIdentity m = BuildMachineIdentity(CpuInfo(3), "0.9.0", BuildCommit());
  utsname u;
  ASSERT_EQ(uname(&u), 0);
  EXPECT_EQ(m.backend(), "cpu");
  EXPECT_EQ(m.driver_version(), "cpu");
  EXPECT_EQ(m.runtime_version(), u.release);
  ASSERT_EQ(m.devices_size(), 3);
  EXPECT_EQ(m.devices(2).uuid(), "cpu-" + HostName() + "-2");
  ASSERT_EQ(m.links_size(), 3);
  for (const v1::Link& l : m.links()) {
    EXPECT_EQ(l.kind(), "shm");
    EXPECT_TRUE(l.p2p());
  }
  EXPECT_EQ(m.key(), MachineKey(m));
  EXPECT_NE(m.key(), BuildMachineIdentity(CpuInfo(4), "0.9.0", BuildCommit()).key());
}

// What the backend announced decides, never its name: virtual devices (reports_devices false)
// have no driver or runtime of their own whatever the backend is called, and real ones report
// the probe's versions even under the name "cpu".
TEST(MachineIdentityTest, VirtualDevicesGetTheCpuIdentityWhateverTheBackendsName) {
  BackendInfo info = TwoGpuInfo();
  info.capabilities.set_reports_devices(false);
  const v1::MachineIdentity virtual_cuda = BuildMachineIdentity(info, "0.9.0", BuildCommit());
  utsname u;
  ASSERT_EQ(uname(&u), 0);
  EXPECT_EQ(virtual_cuda.driver_version(), "cuda");
  EXPECT_EQ(virtual_cuda.runtime_version(), u.release);
  ASSERT_EQ(virtual_cuda.links_size(), 1);
  EXPECT_EQ(virtual_cuda.links(0).kind(), "shm");

  info = TwoGpuInfo();
  info.backend = "cpu";
  const v1::MachineIdentity real_cpu = BuildMachineIdentity(info, "0.9.0", BuildCommit());
  EXPECT_EQ(real_cpu.driver_version(), "13.0");
  EXPECT_EQ(real_cpu.runtime_version(), "12.8");
  EXPECT_EQ(real_cpu.links(0).kind(), "p2p");
}

TEST(MachineIdentityTest, BuildCommitIsSet) {
  const std::string commit = BuildCommit();
  EXPECT_FALSE(commit.empty());
  // "unknown" outside git, else 12 hex digits, "-dirty" when the tree had changes.
  EXPECT_THAT(commit, ::testing::MatchesRegex("unknown|[0-9a-f]{12}(-dirty)?"));
}

}  // namespace
}  // namespace colltest::server
