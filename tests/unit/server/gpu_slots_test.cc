// Ranks that share a GPU (colltestd --ranks-per-gpu, docs/shared-gpu.md): the devices colltestd
// lists for the slots, their links, the placement of workers, the machine identity, the BUSY
// check through the slots, and the timeouts of time-sliced ranks.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/devices/backend_probe.h"
#include "server/devices/device_users.h"
#include "server/devices/machine_identity.h"
#include "server/runs/run_history.h"
#include "server/runs/sweep_plan.h"
#include "store/run_store.h"
#include "tests/unit/server/test_capabilities.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Two GPUs as the worker's probe reports them, linked by NVLink.
const std::string kTwoGpus = absl::StrCat(
    R"({"backend":"cuda","devices":[{"index":0,"name":"NVIDIA H200","memory_bytes":150000000000,)"
    R"("uuid":"GPU-aaaa","pci_bus_id":"0000:19:00.0"},)"
    R"({"index":1,"name":"NVIDIA H200","memory_bytes":150000000000,)"
    R"("uuid":"GPU-bbbb","pci_bus_id":"0000:3b:00.0"}],"driver_version":"13.0",)"
    R"("links":[{"a":0,"b":1,"p2p":true,"performance_rank":1,"native_atomics":true,)"
    R"("kind":"nvlink","lanes":18}],"capabilities":)",
    testing::kGpuCapabilitiesJson, "}");

BackendInfo Gpus() {
  absl::StatusOr<BackendInfo> info = ParseProbeOutput(kTwoGpus);
  EXPECT_TRUE(info.ok()) << info.status();
  return *std::move(info);
}

BackendInfo Slots(uint32_t n) {
  absl::StatusOr<BackendInfo> slots = WithSlotsPerGpu(Gpus(), n);
  EXPECT_TRUE(slots.ok()) << slots.status();
  return *std::move(slots);
}

TEST(GpuSlotsTest, EachGpuOffersItsSlotsInterleavedWithItsOwnIdentity) {
  const BackendInfo info = Slots(4);
  ASSERT_EQ(info.devices.size(), 8u);
  EXPECT_EQ(info.ranks_per_gpu, 4u);
  for (uint32_t i = 0; i < 8; ++i) {
    const v1::Device& d = info.devices[i];
    EXPECT_EQ(d.index(), i);
    // The first devices are distinct GPUs: a group takes separate GPUs before it shares one.
    EXPECT_EQ(d.physical_index(), i % 2);
    EXPECT_EQ(d.slot(), i / 2);
    EXPECT_EQ(d.uuid(), i % 2 == 0 ? "GPU-aaaa" : "GPU-bbbb");
    EXPECT_EQ(d.pci_bus_id(), i % 2 == 0 ? "0000:19:00.0" : "0000:3b:00.0");
    EXPECT_EQ(d.name(), "NVIDIA H200");
    EXPECT_EQ(d.memory_bytes(), 150000000000u);
  }
}

TEST(GpuSlotsTest, SlotsOfOneGpuAreLinkedSameGpuAndSlotsOfTwoByTheirGpusLink) {
  const BackendInfo info = Slots(2);
  ASSERT_EQ(info.links.size(), 6u);  // every pair of 4 devices
  for (const v1::Link& l : info.links) {
    EXPECT_LT(l.a(), l.b());
    const bool same = l.a() % 2 == l.b() % 2;
    EXPECT_EQ(l.kind(), same ? "same_gpu" : "nvlink") << l.ShortDebugString();
    EXPECT_TRUE(l.p2p());
    EXPECT_EQ(l.lanes(), same ? 0u : 18u);
  }
}

TEST(GpuSlotsTest, OneSlotPerGpuLeavesTheDevicesAsTheProbeFoundThem) {
  const BackendInfo info = Slots(1);
  ASSERT_EQ(info.devices.size(), 2u);
  EXPECT_EQ(info.ranks_per_gpu, 1u);
  EXPECT_EQ(info.devices[1].physical_index(), 1u);
  EXPECT_EQ(info.devices[1].slot(), 0u);
  ASSERT_EQ(info.links.size(), 1u);
  EXPECT_EQ(info.links[0].kind(), "nvlink");
}

TEST(GpuSlotsTest, TheCpuBackendHasNoGpuToShare) {
  BackendInfo cpu = WithVirtualDevices(Gpus(), 4);
  cpu.capabilities.set_reports_devices(false);
  const absl::StatusOr<BackendInfo> slots = WithSlotsPerGpu(cpu, 2);
  ASSERT_FALSE(slots.ok());
  EXPECT_EQ(slots.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(slots.status().message(), HasSubstr("--ranks-per-gpu 2"));
  EXPECT_THAT(slots.status().message(), HasSubstr("--cpu-ranks"));
}

TEST(GpuSlotsTest, PlacementCountsTheRanksOfAGroupOnOneGpu) {
  const DevicePlacement placement = PlacementOf(Slots(4));
  EXPECT_EQ(placement.Physical(6), 0u);
  EXPECT_EQ(placement.Physical(7), 1u);
  const std::vector<uint32_t> separate = {0, 1}, pair = {0, 2}, five = {0, 2, 4, 6, 1};
  EXPECT_EQ(placement.RanksOnOneDevice(separate), 1u);
  EXPECT_EQ(placement.RanksOnOneDevice(pair), 2u);
  EXPECT_EQ(placement.RanksOnOneDevice(five), 4u);
  EXPECT_EQ(placement.SlotsPerDevice(), 4u);
  // Nothing placed: every index is a device of its own.
  EXPECT_EQ(DevicePlacement().RanksOnOneDevice(pair), 1u);
  EXPECT_EQ(DevicePlacement().SlotsPerDevice(), 1u);
}

TEST(GpuSlotsTest, MachineKeepsItsKeyAndRecordsTheSlotsAndEachRunsSharing) {
  const v1::MachineIdentity one = BuildMachineIdentity(Slots(1), "v", "c");
  const v1::MachineIdentity four = BuildMachineIdentity(Slots(4), "v", "c");
  EXPECT_EQ(one.key(), four.key());  // the same GPUs
  EXPECT_EQ(one.ranks_per_gpu(), 1u);
  EXPECT_EQ(four.ranks_per_gpu(), 4u);
  const std::vector<uint32_t> separate = {0, 1}, shared = {0, 2, 4, 1};
  EXPECT_EQ(RanksPerGpu(four, separate), 1u);
  EXPECT_EQ(RanksPerGpu(four, shared), 3u);
  // An identity older than the field (ranks_per_gpu 0) places nothing together.
  v1::MachineIdentity old = four;
  old.clear_ranks_per_gpu();
  EXPECT_EQ(RanksPerGpu(old, shared), 1u);
}

// What a run records of its placement: the ranks per GPU of its group, and whether they were
// time-sliced (only a run that shares a GPU is).
TEST(GpuSlotsTest, ARunRecordsHowManyOfItsRanksSharedAGpu) {
  auto opened = store::RunStore::Open(":memory:");
  ASSERT_TRUE(opened.ok()) << opened.status();
  RunHistory history((*opened).get(), BuildMachineIdentity(Slots(4), "v", "c"),
                     /*time_sliced=*/true);
  v1::SweepSpec spec;
  spec.set_world_size(3);
  for (uint32_t d : {0u, 2u, 1u}) spec.add_devices(d);
  absl::StatusOr<std::string> shared = history.Create(spec, "cuda");
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_EQ(history.Get(*shared)->ranks_per_gpu(), 2u);
  EXPECT_TRUE(history.Get(*shared)->time_sliced());
  spec.clear_devices();
  spec.set_world_size(2);
  for (uint32_t d : {0u, 1u}) spec.add_devices(d);
  absl::StatusOr<std::string> separate = history.Create(spec, "cuda");
  ASSERT_TRUE(separate.ok()) << separate.status();
  EXPECT_EQ(history.Get(*separate)->ranks_per_gpu(), 1u);
  EXPECT_FALSE(history.Get(*separate)->time_sliced());
}

// Answers with what the test set, and records what it was asked.
class FakeUsers final : public DeviceUsersProbe {
 public:
  explicit FakeUsers(std::vector<uint32_t>* asked) : asked_(asked) {}
  absl::StatusOr<DeviceUsers> Users(absl::Span<const uint32_t> devices) override {
    asked_->assign(devices.begin(), devices.end());
    return DeviceUsers{"nvml",
                       {{.device = 0, .pid = 4242, .name = "python3"},
                        {.device = 0, .pid = 300, .name = "nvidia-cuda-mps"},
                        {.device = 1, .pid = 77, .name = "viz"}}};
  }

 private:
  std::vector<uint32_t>* asked_;
};

TEST(GpuSlotsTest, UsersOfAGpuMakeEachOfItsAskedSlotsBusyButTheMpsServerDoesNot) {
  std::vector<uint32_t> asked;
  std::unique_ptr<DeviceUsersProbe> probe =
      OnPhysicalDevices(std::make_unique<FakeUsers>(&asked), PlacementOf(Slots(4)));
  const std::vector<uint32_t> devices = {2, 4};  // both slots of GPU 0
  const absl::Status s = CheckDevicesFree(*probe, devices, {});
  EXPECT_THAT(asked, ElementsAre(0u));  // the worker is asked about GPUs
  EXPECT_EQ(s.message(),
            "BUSY: device 2 is used by pid 4242 (python3), device 4 is used by pid 4242 "
            "(python3); --force runs anyway");
}

TEST(GpuSlotsTest, TimeSlicedRanksGetTimeoutsOfAHundredRoundTripsPerRank) {
  v1::SweepSpec spec;
  spec.set_world_size(2);
  spec.add_m(1);
  spec.add_n(1024);
  spec.add_variants(v1::VARIANT_LAMPORT);
  spec.set_timeout_ms(2000);
  SweepPlan plan = PlanSweep(spec);
  // 4.5 ms round trips (measured without MPS on one H200), 8 ranks on one GPU: 3.6 s.
  GrowTimeoutsForTimeSlicing(plan, 8, 4500, 600000);
  EXPECT_EQ(plan.cases[0].timeout_ms(), 3600u);
  GrowTimeoutsForTimeSlicing(plan, 2, 4500, 600000);  // never shorter than it was
  EXPECT_EQ(plan.cases[0].timeout_ms(), 3600u);
  SweepPlan capped = PlanSweep(spec);
  GrowTimeoutsForTimeSlicing(capped, 8, 4500, 3000);  // never past the limit
  EXPECT_EQ(capped.cases[0].timeout_ms(), 3000u);
  SweepPlan concurrent = PlanSweep(spec);
  GrowTimeoutsForTimeSlicing(concurrent, 1, 4500, 600000);
  EXPECT_EQ(concurrent.cases[0].timeout_ms(), 2000u);
}

}  // namespace
}  // namespace colltest::server
