// The GPU backend (CUDA, or HIP through the same source): one registered device allocation per
// rank exported through IPC, the four protocol variants as kernels, inputs, reference and diffs
// computed on the device, and bounded spins that turn hangs into typed results.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "worker/backend.h"
#include "worker/backends/gpu/device_layout.h"
#include "worker/backends/gpu/gpu_handles.h"
#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/backends/gpu/gpu_workspaces.h"
#include "worker/backends/gpu/kernels.h"
#include "worker/backends/gpu/nccl_group.h"
#include "worker/backends/gpu/scratch_layout.h"
#include "worker/protocol/arming.h"

namespace colltest::gpu {

struct GpuBackendOptions {
  uint32_t device = 0;
};

std::unique_ptr<worker::Backend> CreateGpuBackend(const GpuBackendOptions& options);

// What the GPU backend announces, in its Init reply and in ProbeDevicesJson alike: the four
// protocol variants, the NCCL/RCCL anchor and the dispatcher, graph capture, real devices.
colltest::worker::v1::Capabilities GpuCapabilities();

// `{"backend":"cuda","devices":[...],"driver_version":..,"runtime_version":..,"links":[...],
// "capabilities":{...}}` when devices exist, empty otherwise (server/devices/backend_probe.h reads
// it; the capabilities are GpuCapabilities(), worker/capabilities_json.h). Devices carry index,
// name, memory_bytes, uuid, pci_bus_id and serial; links every pair a < b with p2p,
// performance_rank, native_atomics, kind, hops and lanes (device_facts.h). A failed uuid, bus id,
// serial, version or link query leaves that field "" / false / 0 rather than failing the probe.
std::string ProbeDevicesJson();

class GpuBackend final : public worker::Backend {
 public:
  explicit GpuBackend(const GpuBackendOptions& options) : options_(options) {}
  ~GpuBackend() override { Release(); }

  // In the order gpu_backend.cc defines them; RunCase is in gpu_case_runner.cc.
  void Release() override;
  absl::StatusOr<colltest::worker::v1::InitReply> Init(
      const colltest::worker::v1::InitRequest& request) override;
  absl::Status Connect(const colltest::worker::v1::ConnectRequest& request) override;
  absl::Status Reset() override;
  absl::StatusOr<colltest::v1::RankResult> RunCase(
      const colltest::worker::v1::CaseRequest& request) override;

 private:
  // The backend's CaseRuntime and CaseRules for the case driver (gpu_case_runner.cc).
  class Runtime;
  class Rules;

  // Arms Lamport staging for `bytes` per rank (never inside a capture), then meets the peers.
  // False when the host barrier hung.
  absl::StatusOr<bool> EnsureArmed(colltest::v1::Variant variant, DType dtype, size_t bytes,
                                   uint64_t timeout_ns);
  // The registered allocation, the private buffers, the hang record and the stream (Init).
  absl::Status AllocateBuffers();
  uint32_t SpinLimit(uint32_t threads) const;
  // This rank's share of `resident` co-resident blocks: all of them, or 1/device_slots of them
  // when ranks may share the device (docs/shared-gpu.md), at least one.
  uint32_t ShareOf(uint32_t resident) const;
  bool HangRecorded() const;
  // The current device is per host thread and gRPC serves each call on any thread of its pool:
  // every entry point selects the rank's device first.
  absl::Status UseDevice() const;
  absl::Status ClearHang();

  GpuBackendOptions options_;
  uint32_t rank_ = 0;
  uint32_t world_ = 0;
  GpuLayout layout_;
  DeviceMemory<uint8_t> own_;               // the registered allocation
  std::vector<IpcMapping<uint8_t>> peers_;  // opened IPC mappings (none for self)
  DeviceGroup group_{};
  HostMappedMemory<HangRecord> hang_host_;
  HangRecord* hang_device_ = nullptr;  // hang_host_ as the device sees it
  StreamHandle stream_;
  int multiprocessors_ = 0;
  Fp8Format fp8_format_ = Fp8Format::kE4m3fn;  // the device's own (DeviceInfo::fp8_fnuz)
  // The most ranks of the group on one device (InitRequest.ranks_on_device), at least 1.
  uint32_t ranks_on_device_ = 1;
  // The ranks that may spin on this device at once (InitRequest.device_slots), at least 1.
  uint32_t device_slots_ = 1;
  int blocks_per_sm_256_ = 0;
  int blocks_per_sm_512_ = 0;
  // Private per-case buffers, sized once for the largest case, and where each one lies in them.
  DeviceMemory<uint8_t> scratch_;
  ScratchLayout scratch_layout_;
  bool connected_ = false;
  NcclGroup nccl_;  // the `nccl` variant (nccl_group.h)
  // Kernel plugins (docs/plugins.md) and their IPC workspaces.
  GpuWorkspaces workspaces_;
  worker::plugins::PluginGroup plugins_;

  protocol::Armed lamport_armed_;
  protocol::Armed tb_armed_;
};

// absl::Status from a runtime call; `what` names the call.
absl::Status GpuOk(Error e, const char* what);
// The same for a launch or an occupancy query: InvalidArgument where no kernel is instantiated for
// the values asked (naming the parameter and the values that exist), else as above.
absl::Status GpuOk(const KernelStatus& s, const char* what);

}  // namespace colltest::gpu
