// The kernel plugins of one group of ranks (docs/plugins.md): loaded at Init, each given a
// symmetric workspace that the backend allocates and exports, mapped at Connect and handed to the
// plugin's init, and finished (fini, then unmapped) when the group ends. The backend supplies the
// memory (POSIX shared memory on the cpu backend, IPC memory on GPUs) through WorkspaceMemory;
// everything else about a plugin's life in a group is here, once for every backend.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "colltest/kernel_plugin.h"
#include "colltest/v1/worker.pb.h"
#include "worker/plugins/kernel_plugin.h"

namespace colltest::worker::plugins {

// The handle name of a plugin's workspace among a rank's buffer handles.
std::string WorkspaceHandleName(const std::string& plugin_name);

// One rank's view of one workspace: its own (allocated, zeroed) or a peer's (mapped).
class WorkspaceRegion {
 public:
  virtual ~WorkspaceRegion() = default;
  virtual void* data() const = 0;
};

// The backend's symmetric memory.
class WorkspaceMemory {
 public:
  virtual ~WorkspaceMemory() = default;
  // `bytes` (> 0) of zeroed memory for this rank, and in `handle` what a peer opens it by.
  virtual absl::StatusOr<std::unique_ptr<WorkspaceRegion>> Allocate(
      const std::string& name, uint64_t bytes, colltest::worker::v1::BufferHandle& handle) = 0;
  virtual absl::StatusOr<std::unique_ptr<WorkspaceRegion>> Open(
      const colltest::worker::v1::BufferHandle& handle) = 0;
};

// What one entry point answered: COLLTEST_OK, _UNSUPPORTED or _ERROR (any other value is read as
// _ERROR), and the plugin's message as it wrote it.
struct EntryResult {
  colltest_status_t status = COLLTEST_OK;
  std::string message;
  bool ok() const { return status == COLLTEST_OK; }
};

// "plugin:NAME launch (call 3): error: WHAT THE PLUGIN WROTE" (`call` < 0: no call named).
std::string EntryMessage(const std::string& variant, const char* entry, int64_t call,
                         const EntryResult& r);

// One plugin in one group, from init to fini.
class GroupPlugin {
 public:
  GroupPlugin(std::unique_ptr<KernelPlugin> plugin, colltest_shape_v1_t largest)
      : plugin_(std::move(plugin)), largest_(largest) {}
  ~GroupPlugin();  // fini (when init succeeded), then the workspaces are released
  GroupPlugin(const GroupPlugin&) = delete;
  GroupPlugin& operator=(const GroupPlugin&) = delete;

  const colltest_kernel_v1_t& kernel() const { return plugin_->kernel(); }
  const PluginReport& report() const { return plugin_->report(); }
  // "plugin:<name>", as cases and messages name it.
  std::string variant() const;
  uint64_t workspace_bytes() const { return workspace_bytes_; }
  // Why this group cannot run it (its workspace or init failed); "" when it can.
  const std::string& refused() const { return refused_; }
  bool ready() const { return refused_.empty() && initialised_; }

  // Sizes this rank's workspace for a group whose ranks hold `case_bytes` of input
  // (SizingShapes) and allocates it; a failure refuses the plugin for the group.
  void Allocate(WorkspaceMemory& memory, uint64_t case_bytes,
                colltest::worker::v1::InitReply& reply);
  // Maps the peers' workspaces (handles by rank) and calls init.
  void Connect(WorkspaceMemory& memory,
               const std::vector<const colltest::worker::v1::BufferHandle*>& by_rank,
               int32_t device);

  EntryResult WorkspaceBytes(const colltest_shape_v1_t& shape, uint64_t& bytes) const;
  EntryResult Arm(void* stream);
  EntryResult Launch(const colltest_launch_v1_t& call);

 private:
  void Refuse(const std::string& why) {
    if (refused_.empty()) refused_ = why;
  }

  std::unique_ptr<KernelPlugin> plugin_;
  colltest_shape_v1_t largest_;
  uint64_t workspace_bytes_ = 0;
  std::string refused_;
  // Own first, then the peers'; released after fini.
  std::vector<std::unique_ptr<WorkspaceRegion>> regions_;
  std::vector<void*> peer_workspace_;
  void* state_ = nullptr;
  bool initialised_ = false;
};

// Every plugin of a group, by name.
class PluginGroup {
 public:
  // Init: loads each plugin of `request.kernel_plugins` for `backend` (a COLLTEST_BACKEND_* bit),
  // refusing one whose file's SHA-256 differs from what colltestd checked, and allocates the
  // workspaces of those loaded. Adds the workspace handles and the reports to `reply`.
  // `case_bytes` is the largest input of one rank the group is set up for.
  void Load(const colltest::worker::v1::InitRequest& request, uint32_t backend, uint64_t case_bytes,
            WorkspaceMemory& memory, colltest::worker::v1::InitReply& reply);
  // Connect: maps every peer's workspace of each plugin and calls its init.
  absl::Status Connect(const colltest::worker::v1::ConnectRequest& request, int32_t device,
                       WorkspaceMemory& memory);
  // fini of each, then unmaps.
  void Release() {
    plugins_.clear();
    refused_.clear();
  }

  // The plugin `name` of this group, or null.
  GroupPlugin* Find(const std::string& name) const;
  // Why this rank did not load the plugin `name` ("" when it did, or was not given it).
  std::string RefusedAtLoad(const std::string& name) const;

 private:
  std::map<std::string, std::unique_ptr<GroupPlugin>> plugins_;
  std::map<std::string, std::string> refused_;  // by the name colltestd checked
};

// The largest call of a group whose ranks hold `case_bytes` of input: n = 16384 (the server's
// largest hidden size) and as many rows as fit, in the widest dtype the plugin takes. The
// workspace is sized for the larger of this and the most rows (65536) at the n that fits.
std::vector<colltest_shape_v1_t> SizingShapes(const colltest_kernel_v1_t& kernel,
                                              colltest_shape_v1_t base, uint64_t case_bytes);

}  // namespace colltest::worker::plugins
