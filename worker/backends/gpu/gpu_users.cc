#include "worker/backends/gpu/gpu_users.h"

#include <unistd.h>

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/device_users_scan.h"
#include "worker/pci_sysfs.h"
#if COLLTEST_GPU_HAVE_NVML
#include "worker/backends/gpu/nvml_library.h"
#endif

namespace colltest::gpu {
namespace {

using worker::DeviceUser;

// The device's PCI bus id, which NVML and sysfs both know it by. A device-management query: the
// runtime initialises its driver (cuInit opens the driver's device files) but creates no context,
// so this process neither appears among a device's compute processes nor takes device memory.
// The runtime's index is the probe's (same environment: CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER),
// while NVML's order ignores both: the bus id is where they meet.
absl::StatusOr<std::string> PciBusId(uint32_t device) {
  char bus[64] = {};
  if (const Error e = GetPciBusId(static_cast<int>(device), bus, sizeof bus); e != kSuccess) {
    return absl::NotFoundError(absl::StrCat("device ", device, ": ", ErrorString(e)));
  }
  bus[sizeof bus - 1] = 0;
  return std::string(bus);
}

#if COLLTEST_GPU_HAVE_NVML
constexpr char kSource[] = "nvml";

absl::Status FindUsers(const std::vector<uint32_t>& devices, std::vector<DeviceUser>* users) {
  COLLTEST_ASSIGN_OR_RETURN(std::unique_ptr<NvmlLibrary> nvml, NvmlLibrary::Load());
  for (const uint32_t device : devices) {
    COLLTEST_ASSIGN_OR_RETURN(const std::string bus, PciBusId(device));
    COLLTEST_ASSIGN_OR_RETURN(NvmlLibrary::Device d, nvml->DeviceByPciBusId(bus));
    COLLTEST_ASSIGN_OR_RETURN(std::vector<NvmlLibrary::Process> found, nvml->RunningProcesses(d));
    for (const NvmlLibrary::Process& p : found) {
      users->push_back({.device = device,
                        .pid = p.pid,
                        .name = worker::ProcessName(p.pid),
                        .memory_bytes = p.memory_bytes});
    }
  }
  return absl::OkStatus();
}
#else
constexpr char kSource[] = "proc";

// A ROCm process opens the render node of every GPU it may see when its runtime starts, so one
// that selects its GPU by HIP_VISIBLE_DEVICES alone is listed on the others too: this source may
// name more users than there are, never fewer among the processes it may inspect.
absl::Status FindUsers(const std::vector<uint32_t>& devices, std::vector<DeviceUser>* users) {
  for (const uint32_t device : devices) {
    COLLTEST_ASSIGN_OR_RETURN(const std::string bus, PciBusId(device));
    const std::string node = worker::RenderNode(bus);
    if (node.empty())
      return absl::NotFoundError(
          absl::StrCat("device ", device, " (", bus, ") has no render node in sysfs"));
    COLLTEST_ASSIGN_OR_RETURN(std::vector<int64_t> pids, worker::PidsWithFileOpen(node));
    for (const int64_t pid : pids) {
      users->push_back({.device = device, .pid = pid, .name = worker::ProcessName(pid)});
    }
  }
  return absl::OkStatus();
}
#endif

}  // namespace

std::string DeviceUsersJson(std::vector<uint32_t> devices) {
  if (devices.empty()) {
    int count = 0;
    if (GetDeviceCount(&count) != kSuccess) count = 0;
    for (int d = 0; d < count; ++d) devices.push_back(static_cast<uint32_t>(d));
  }
  std::vector<DeviceUser> users;
  if (const absl::Status s = FindUsers(devices, &users); !s.ok()) {
    return worker::DeviceUsersJson(kBackendName, "none", {}, s.message());
  }
  // The runtime this process started holds the render nodes open (HIP): it is not a user.
  std::erase_if(users, [self = getpid()](const DeviceUser& u) { return u.pid == self; });
  return worker::DeviceUsersJson(kBackendName, kSource, users);
}

}  // namespace colltest::gpu
