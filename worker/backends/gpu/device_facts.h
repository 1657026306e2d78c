// What the probe reports beyond the runtime's own queries (gpu_backend.h ProbeDevicesJson): a
// device's board serial and the kind of link between two devices. CUDA asks NVML when the
// driver's library loads; HIP asks sysfs and the runtime (gpu_runtime.h, machine facts).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace colltest::gpu {

struct LinkFacts {
  std::string kind;  // colltest.v1.Link.kind: "nvlink", "xgmi", "pcie", "p2p" or "none"
  uint32_t hops = 0;
  uint32_t lanes = 0;
};

class DeviceFacts {
 public:
  DeviceFacts();  // opens NVML on CUDA; without it the facts below are the runtime's alone
  ~DeviceFacts();

  // The board serial of the device at `pci_bus_id`; "" when none is given.
  std::string Serial(const std::string& pci_bus_id) const;

  // Devices a and b (runtime indices, at those bus ids); `p2p` whether peer access works both ways.
  LinkFacts Link(int a, int b, const std::string& bus_a, const std::string& bus_b, bool p2p) const;

 private:
  struct Sources;  // the management library, where the build has one
  std::unique_ptr<Sources> sources_;
};

}  // namespace colltest::gpu
