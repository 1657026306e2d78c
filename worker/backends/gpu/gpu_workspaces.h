// Kernel plugin workspaces on a GPU: one device allocation per plugin and rank, zeroed, exported
// and opened through CUDA/HIP IPC like the rank's own buffers (docs/plugins.md).
#pragma once

#include <memory>
#include <string>

#include "worker/plugins/plugin_group.h"

namespace colltest::gpu {

class GpuWorkspaces final : public worker::plugins::WorkspaceMemory {
 public:
  absl::StatusOr<std::unique_ptr<worker::plugins::WorkspaceRegion>> Allocate(
      const std::string& name, uint64_t bytes, colltest::worker::v1::BufferHandle& handle) override;
  absl::StatusOr<std::unique_ptr<worker::plugins::WorkspaceRegion>> Open(
      const colltest::worker::v1::BufferHandle& handle) override;
};

}  // namespace colltest::gpu
