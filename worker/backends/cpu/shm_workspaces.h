// Kernel plugin workspaces on the cpu backend: one POSIX shared-memory segment per plugin and
// rank, named after the rank's own segment so that the controller sweeps it with the rest.
#pragma once

#include <memory>
#include <string>

#include "worker/plugins/plugin_group.h"

namespace colltest::cpu {

class ShmWorkspaces final : public worker::plugins::WorkspaceMemory {
 public:
  // `base`: the name of the rank's own segment; a workspace is "<base>.<plugin name>".
  explicit ShmWorkspaces(std::string base) : base_(std::move(base)) {}

  absl::StatusOr<std::unique_ptr<worker::plugins::WorkspaceRegion>> Allocate(
      const std::string& name, uint64_t bytes, colltest::worker::v1::BufferHandle& handle) override;
  absl::StatusOr<std::unique_ptr<worker::plugins::WorkspaceRegion>> Open(
      const colltest::worker::v1::BufferHandle& handle) override;

 private:
  std::string base_;
};

}  // namespace colltest::cpu
