// What the kernel tells about a GPU through sysfs, found by the PCI bus id the runtime reports
// ("0000:19:00.0"): facts the HIP runtime does not give (the board serial, the render node its
// users open), and the bus id's parts, by which NVML names the far end of an NVLink.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace colltest::worker {

struct PciAddress {
  uint32_t domain = 0;
  uint32_t bus = 0;
  uint32_t device = 0;
  uint32_t function = 0;
  bool operator==(const PciAddress&) const = default;
};

// "0000:19:00.0", "00000000:19:00.0" (NVML's form) or "19:00.0" (domain 0); hex, either case.
std::optional<PciAddress> ParsePciBusId(absl::string_view text);

// The device's directory: <sysfs>/bus/pci/devices/0000:19:00.0 (sysfs spells it in lower case
// with a four-digit domain, whatever form `pci_bus_id` has); "" when the id does not parse.
std::string PciDeviceDir(absl::string_view pci_bus_id, const std::string& sysfs = "/sys");

// "/dev/dri/renderD128" for the device's drm/renderD128 entry; "" when it has none.
std::string RenderNode(absl::string_view pci_bus_id, const std::string& sysfs = "/sys");

// The board serial the driver exports (amdgpu: serial_number in the device's directory, or in its
// drm card's device directory); "" when neither is there or it is empty.
std::string PciSerialNumber(absl::string_view pci_bus_id, const std::string& sysfs = "/sys");

}  // namespace colltest::worker
