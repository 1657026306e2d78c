#include "worker/backends/gpu/nvml_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/pci_sysfs.h"

namespace colltest::gpu {
namespace {

// NVML's C ABI as nvml.h of NVML API version 12 (CUDA 12.x and 13.x) declares it; the versioned
// names are the ones that header maps nvmlInit, nvmlDeviceGetHandleByPciBusId and
// nvmlDevice{Compute,Graphics}RunningProcesses to. A driver too old to export one leaves what
// needs it empty (Load).
using Return = int;                         // nvmlReturn_t
constexpr Return kSuccess = 0;              // NVML_SUCCESS
constexpr Return kInsufficientSize = 7;     // NVML_ERROR_INSUFFICIENT_SIZE
constexpr int kP2PCapsIndexNvlink = 2;      // NVML_P2P_CAPS_INDEX_NVLINK (nvmlGpuP2PCapsIndex_t)
constexpr int kP2PStatusOk = 0;             // NVML_P2P_STATUS_OK (nvmlGpuP2PStatus_t)
constexpr int kFeatureEnabled = 1;          // NVML_FEATURE_ENABLED (nvmlEnableState_t)
constexpr unsigned kMaxNvlinks = 18;        // NVML_NVLINK_MAX_LINKS
constexpr unsigned kSerialBufferSize = 30;  // NVML_DEVICE_SERIAL_BUFFER_SIZE
// nvmlProcessInfo_t's usedGpuMemory when NVML cannot tell (NVML_VALUE_NOT_AVAILABLE).
constexpr unsigned long long kValueNotAvailable = ~0ull;

// nvmlPciInfo_t.
struct PciInfo {
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[32];
};
static_assert(sizeof(PciInfo) == 68);

// nvmlProcessInfo_t (nvmlProcessInfo_v2_t), what the _v3 process queries fill.
struct ProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
static_assert(sizeof(ProcessInfo) == 24);

using Device = NvmlLibrary::Device;
using ProcessesFn = Return (*)(Device, unsigned int*, ProcessInfo*);

// One process list; NVML wants the count first, and processes may come between the two calls.
absl::Status AppendProcesses(ProcessesFn fn, const char* name, Device d,
                             std::vector<ProcessInfo>* out) {
  if (fn == nullptr) return absl::UnimplementedError(absl::StrCat(name, " is not exported"));
  unsigned int count = 0;
  Return r = fn(d, &count, nullptr);
  for (int attempt = 0; attempt < 4 && r == kInsufficientSize; ++attempt) {
    std::vector<ProcessInfo> infos(count + 8);
    count = static_cast<unsigned int>(infos.size());
    r = fn(d, &count, infos.data());
    if (r == kSuccess) out->insert(out->end(), infos.begin(), infos.begin() + count);
  }
  if (r != kSuccess) return absl::InternalError(absl::StrCat(name, " returned ", r));
  return absl::OkStatus();
}

}  // namespace

struct NvmlLibrary::Api {
  Return (*init)() = nullptr;
  Return (*shutdown)() = nullptr;
  Return (*by_pci_bus_id)(const char*, Device*) = nullptr;
  Return (*serial)(Device, char*, unsigned int) = nullptr;
  Return (*p2p_status)(Device, Device, int, int*) = nullptr;
  Return (*nvlink_state)(Device, unsigned int, int*) = nullptr;
  Return (*nvlink_remote_pci)(Device, unsigned int, PciInfo*) = nullptr;
  ProcessesFn compute_processes = nullptr;
  ProcessesFn graphics_processes = nullptr;
};

void NvmlLibrary::DlClose::operator()(void* handle) const { dlclose(handle); }

NvmlLibrary::NvmlLibrary(std::unique_ptr<void, DlClose> handle, std::unique_ptr<Api> api)
    : handle_(std::move(handle)), api_(std::move(api)) {}

NvmlLibrary::~NvmlLibrary() { api_->shutdown(); }

absl::StatusOr<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Load() {
  std::unique_ptr<void, DlClose> handle(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL));
  if (handle == nullptr) return absl::UnavailableError(dlerror());
  auto api = std::make_unique<Api>();
  auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle.get(), name));
  };
  resolve(api->init, "nvmlInit_v2");
  resolve(api->shutdown, "nvmlShutdown");
  resolve(api->by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
  if (api->init == nullptr || api->shutdown == nullptr || api->by_pci_bus_id == nullptr) {
    return absl::UnavailableError(
        "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlShutdown or "
        "nvmlDeviceGetHandleByPciBusId_v2");
  }
  // The rest may be missing from an old driver: what needs one then reports nothing.
  resolve(api->serial, "nvmlDeviceGetSerial");
  resolve(api->p2p_status, "nvmlDeviceGetP2PStatus");
  resolve(api->nvlink_state, "nvmlDeviceGetNvLinkState");
  resolve(api->nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  resolve(api->compute_processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  resolve(api->graphics_processes, "nvmlDeviceGetGraphicsRunningProcesses_v3");
  if (const Return r = api->init(); r != kSuccess) {
    return absl::UnavailableError(absl::StrCat("nvmlInit_v2 returned ", r));
  }
  return std::unique_ptr<NvmlLibrary>(new NvmlLibrary(std::move(handle), std::move(api)));
}

absl::StatusOr<Device> NvmlLibrary::DeviceByPciBusId(const std::string& pci_bus_id) const {
  Device d = nullptr;
  if (const Return r = api_->by_pci_bus_id(pci_bus_id.c_str(), &d); r != kSuccess) {
    return absl::NotFoundError(
        absl::StrCat("nvmlDeviceGetHandleByPciBusId_v2(", pci_bus_id, ") returned ", r));
  }
  return d;
}

std::string NvmlLibrary::Serial(Device d) const {
  char serial[kSerialBufferSize] = {};
  if (api_->serial == nullptr || api_->serial(d, serial, sizeof serial) != kSuccess) return "";
  serial[sizeof serial - 1] = 0;
  return serial;
}

bool NvmlLibrary::NvlinkP2P(Device a, Device b) const {
  int status = -1;
  return api_->p2p_status != nullptr &&
         api_->p2p_status(a, b, kP2PCapsIndexNvlink, &status) == kSuccess && status == kP2PStatusOk;
}

uint32_t NvmlLibrary::NvlinksTo(Device a, absl::string_view b_pci_bus_id) const {
  const std::optional<worker::PciAddress> b = worker::ParsePciBusId(b_pci_bus_id);
  if (!b || api_->nvlink_state == nullptr || api_->nvlink_remote_pci == nullptr) return 0;
  uint32_t lanes = 0;
  for (unsigned link = 0; link < kMaxNvlinks; ++link) {
    int active = 0;
    PciInfo far{};
    // A link the device does not have answers an error: skipped like an inactive one.
    if (api_->nvlink_state(a, link, &active) != kSuccess || active != kFeatureEnabled ||
        api_->nvlink_remote_pci(a, link, &far) != kSuccess) {
      continue;
    }
    if (far.domain == b->domain && far.bus == b->bus && far.device == b->device) ++lanes;
  }
  return lanes;
}

absl::StatusOr<std::vector<NvmlLibrary::Process>> NvmlLibrary::RunningProcesses(Device d) const {
  std::vector<ProcessInfo> infos;
  COLLTEST_RETURN_IF_ERROR(AppendProcesses(api_->compute_processes,
                                           "nvmlDeviceGetComputeRunningProcesses_v3", d, &infos));
  // A board without graphics may refuse the graphics list; the compute list is what matters.
  (void)AppendProcesses(api_->graphics_processes, "nvmlDeviceGetGraphicsRunningProcesses_v3", d,
                        &infos);
  std::vector<Process> out;
  for (const ProcessInfo& info : infos) {
    const uint64_t bytes = info.used_gpu_memory == kValueNotAvailable ? 0 : info.used_gpu_memory;
    auto same =
        std::find_if(out.begin(), out.end(), [&](const Process& p) { return p.pid == info.pid; });
    if (same == out.end()) {
      out.push_back({.pid = info.pid, .memory_bytes = bytes});
    } else {
      same->memory_bytes = std::max(same->memory_bytes, bytes);
    }
  }
  return out;
}

}  // namespace colltest::gpu
