// The cpu backend: each rank is a worker process, its registered buffers live in POSIX shared
// memory, blocks are threads, and the protocols are the GPU kernels' own
// (docs/design.md section 8).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "worker/backend.h"
#include "worker/backends/cpu/block_pool.h"
#include "worker/backends/cpu/kernels.h"
#include "worker/backends/cpu/protocol_breaks.h"
#include "worker/backends/cpu/rank_memory.h"
#include "worker/backends/cpu/shm_segment.h"
#include "worker/backends/cpu/shm_workspaces.h"
#include "worker/numerics/reference.h"
#include "worker/plugins/plugin_group.h"
#include "worker/protocol/arming.h"

namespace colltest::cpu {

struct CpuBackendOptions {
  uint32_t device = 0;
  uint32_t resident_blocks = 2;  // threads per rank, i.e. co-resident blocks
  // Deliberately broken protocol rules (tests only: in-process tests and colltest-worker-breaks).
  ProtocolBreaks breaks;
};

std::unique_ptr<worker::Backend> CreateCpuBackend(const CpuBackendOptions& options);

// What the cpu backend announces, in its Init reply and in `colltest-worker --probe` alike: the
// four protocol variants, eager only (no graphs), virtual devices (no users, driver or runtime of
// their own), buffers in POSIX shared memory.
colltest::worker::v1::Capabilities CpuCapabilities();

class CpuBackend final : public worker::Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options);
  ~CpuBackend() override;

  absl::StatusOr<colltest::worker::v1::InitReply> Init(
      const colltest::worker::v1::InitRequest& request) override;
  absl::Status Connect(const colltest::worker::v1::ConnectRequest& request) override;
  absl::StatusOr<colltest::v1::RankResult> RunCase(
      const colltest::worker::v1::CaseRequest& request) override;
  absl::Status Reset() override;
  // Unmaps every segment (the own one is unlinked as it goes, worker/backends/cpu/shm_segment.h).
  void Release() override {
    plugins_.Release();  // fini while every workspace is still mapped
    workspaces_.reset();
    pool_.reset();
    peers_.clear();
    own_ = ShmSegment();
    connected_ = false;
  }

 private:
  // The backend's CaseRuntime and CaseRules for the case driver (case_runner.cc): one case in
  // flight, its buffers and the rules in force for it.
  class Runtime;
  class Rules;

  // Arms Lamport staging for `bytes` per rank, with a host barrier when anything changed so that
  // no peer writes into a region this rank is still arming. Never part of a captured graph.
  bool EnsureArmed(colltest::v1::Variant variant, DType dtype, size_t bytes);
  // The staging regions of this rank that a Lamport variant keeps armed.
  std::vector<uint8_t*> ArmedRegions(colltest::v1::Variant variant) const;

  CpuBackendOptions options_;
  uint32_t rank_ = 0;
  uint32_t world_ = 0;
  RankLayout layout_;
  ShmSegment own_;
  std::vector<ShmSegment> peers_;
  GroupView group_;
  RankPendingStores pending_;
  std::unique_ptr<BlockPool> pool_;
  SpinGuard guard_;
  bool connected_ = false;
  // Kernel plugins (docs/plugins.md): their workspaces are segments of their own.
  std::unique_ptr<ShmWorkspaces> workspaces_;
  worker::plugins::PluginGroup plugins_;

  protocol::Armed lamport_armed_;
  protocol::Armed tb_armed_;
};

}  // namespace colltest::cpu
