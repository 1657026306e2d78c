// NVML, the NVIDIA management library, opened with dlopen("libnvidia-ml.so.1") when the worker
// runs. It is the driver's library, not the toolkit's: linking it would tie the worker to a
// machine with the driver installed, and a missing one must only leave the probe's NVML fields
// empty and the --users source "none". No nvml.h is needed either: the few entry points and
// structures used are declared in nvml_library.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace colltest::gpu {

class NvmlLibrary {
 public:
  struct DeviceSt;
  using Device = DeviceSt*;  // nvmlDevice_t
  struct Process {
    int64_t pid = 0;
    uint64_t memory_bytes = 0;  // 0 when NVML cannot tell
  };
  struct Api;  // the resolved entry points

  // Opens the library and initialises NVML; an error when either fails.
  static absl::StatusOr<std::unique_ptr<NvmlLibrary>> Load();
  ~NvmlLibrary();  // nvmlShutdown, then the library is closed
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // The device at a PCI bus id as the CUDA runtime spells it ("0000:19:00.0"). NVML ignores
  // CUDA_VISIBLE_DEVICES and numbers devices in its own order, so the bus id is what the two
  // agree on.
  absl::StatusOr<Device> DeviceByPciBusId(const std::string& pci_bus_id) const;

  // The board serial; "" when NVML has none to give (GeForce boards have none).
  std::string Serial(Device d) const;

  // Whether NVML reports NVLink peer-to-peer between the two devices.
  bool NvlinkP2P(Device a, Device b) const;

  // The active NVLinks of `a` whose far end is the device at `b_pci_bus_id`. 0 behind an NVSwitch,
  // where every link ends at a switch.
  uint32_t NvlinksTo(Device a, absl::string_view b_pci_bus_id) const;

  // Every process with a compute or graphics context on `d` (one listed in both, once).
  absl::StatusOr<std::vector<Process>> RunningProcesses(Device d) const;

 private:
  struct DlClose {
    void operator()(void* handle) const;
  };
  NvmlLibrary(std::unique_ptr<void, DlClose> handle, std::unique_ptr<Api> api);

  std::unique_ptr<void, DlClose> handle_;
  std::unique_ptr<Api> api_;
};

}  // namespace colltest::gpu
