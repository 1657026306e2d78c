#include "worker/backends/gpu/gpu_workspaces.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/backends/gpu/gpu_backend.h"
#include "worker/backends/gpu/gpu_handles.h"

namespace colltest::gpu {
namespace {

// A region owns its allocation or its mapping: `Handle` is DeviceMemory or IpcMapping.
template <class Handle>
class GpuRegion final : public worker::plugins::WorkspaceRegion {
 public:
  explicit GpuRegion(Handle h) : h_(std::move(h)) {}
  void* data() const override { return h_.get(); }

 private:
  Handle h_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<worker::plugins::WorkspaceRegion>> GpuWorkspaces::Allocate(
    const std::string& name, uint64_t bytes, colltest::worker::v1::BufferHandle& handle) {
  DeviceMemory<uint8_t> memory;
  const std::string what = absl::StrCat("allocate the workspace of ", name);
  if (auto s = GpuOk(AllocateDevice(bytes, &memory), what.c_str()); !s.ok()) return s;
  if (auto s = GpuOk(Memset(memory.get(), 0, bytes), "zero a plugin workspace"); !s.ok()) return s;
  IpcMemHandle ipc;
  if (auto s = GpuOk(IpcGetMemHandle(&ipc, memory.get()), "export a plugin workspace"); !s.ok()) {
    return s;
  }
  handle.set_handle(std::string(reinterpret_cast<const char*>(&ipc), sizeof ipc));
  handle.set_bytes(bytes);
  return std::make_unique<GpuRegion<DeviceMemory<uint8_t>>>(std::move(memory));
}

absl::StatusOr<std::unique_ptr<worker::plugins::WorkspaceRegion>> GpuWorkspaces::Open(
    const colltest::worker::v1::BufferHandle& handle) {
  if (handle.handle().size() != sizeof(IpcMemHandle)) {
    return absl::InvalidArgumentError(
        absl::StrCat(handle.name(), ": not an IPC handle of this runtime"));
  }
  IpcMemHandle ipc;
  std::memcpy(&ipc, handle.handle().data(), sizeof ipc);
  IpcMapping<uint8_t> mapping;
  if (auto s = GpuOk(OpenIpc(ipc, &mapping), "open a peer's plugin workspace"); !s.ok()) return s;
  return std::make_unique<GpuRegion<IpcMapping<uint8_t>>>(std::move(mapping));
}

}  // namespace colltest::gpu
