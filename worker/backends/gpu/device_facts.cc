#include "worker/backends/gpu/device_facts.h"

#include <utility>

#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/pci_sysfs.h"
#if COLLTEST_GPU_HAVE_NVML
#include "worker/backends/gpu/nvml_library.h"
#endif

namespace colltest::gpu {

struct DeviceFacts::Sources {
#if COLLTEST_GPU_HAVE_NVML
  std::unique_ptr<NvmlLibrary> nvml;  // null when the driver's library did not load
#endif
};

DeviceFacts::DeviceFacts() : sources_(std::make_unique<Sources>()) {
#if COLLTEST_GPU_HAVE_NVML
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Load();
  if (nvml.ok()) sources_->nvml = *std::move(nvml);
#endif
}

DeviceFacts::~DeviceFacts() = default;

std::string DeviceFacts::Serial(const std::string& pci_bus_id) const {
#if COLLTEST_GPU_HAVE_NVML
  if (sources_->nvml == nullptr) return "";
  absl::StatusOr<NvmlLibrary::Device> d = sources_->nvml->DeviceByPciBusId(pci_bus_id);
  return d.ok() ? sources_->nvml->Serial(*d) : "";
#else
  return worker::PciSerialNumber(pci_bus_id);
#endif
}

LinkFacts DeviceFacts::Link(int a, int b, const std::string& bus_a, const std::string& bus_b,
                            bool p2p) const {
  const RuntimeLink runtime = GetRuntimeLink(a, b);
  if (runtime.kind != nullptr) return {.kind = runtime.kind, .hops = runtime.hops};
  // What is known without a library that names the link.
  LinkFacts facts{.kind = p2p ? "p2p" : "none", .hops = runtime.hops};
#if COLLTEST_GPU_HAVE_NVML
  if (sources_->nvml == nullptr) return facts;
  const NvmlLibrary& nvml = *sources_->nvml;
  absl::StatusOr<NvmlLibrary::Device> da = nvml.DeviceByPciBusId(bus_a);
  absl::StatusOr<NvmlLibrary::Device> db = nvml.DeviceByPciBusId(bus_b);
  if (!da.ok() || !db.ok()) return facts;
  if (nvml.NvlinkP2P(*da, *db)) {
    // Lanes are the direct links only: 0 when the pair meets through NVSwitches.
    return {.kind = "nvlink", .lanes = nvml.NvlinksTo(*da, bus_b)};
  }
  // NVML knows every NVLink: peer access without one goes over PCIe.
  facts.kind = p2p ? "pcie" : "none";
#endif
  return facts;
}

}  // namespace colltest::gpu
