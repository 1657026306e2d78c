// The cpu backend: each rank is a worker process, its registered buffers live in POSIX shared
// memory, blocks are threads, and the protocols are the GPU kernels' own (DESIGN section 8).
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
#include "worker/fault_plan.h"
#include "worker/numerics/reference.h"

namespace colltest::cpu {

struct CpuBackendOptions {
  uint32_t device = 0;
  uint32_t resident_blocks = 2;  // threads per rank, i.e. co-resident blocks
  // Deliberately broken protocol rules (tests only); defaults to COLLTEST_BREAK_PROTOCOL.
  ProtocolBreaks breaks = ActiveProtocolBreaks();
};

std::unique_ptr<worker::Backend> CreateCpuBackend(const CpuBackendOptions& options);

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
  void Release() override;

 private:
  // One case in flight: its buffers and settings.
  struct CaseState;

  // Arms Lamport staging for `bytes` per rank, with a host barrier when anything changed so that
  // no peer writes into a region this rank is still arming. Never part of a captured graph.
  bool EnsureArmed(colltest::v1::Variant variant, DType dtype, size_t bytes);
  // The staging regions of this rank that a Lamport variant keeps armed.
  std::vector<uint8_t*> ArmedRegions(colltest::v1::Variant variant) const;
  void GenerateInputs(CaseState& cs, uint32_t slot, uint64_t call, uint32_t m);
  // Launches one call of `variant` with `m` rows on input slot `slot`; false when it hung.
  bool LaunchCall(CaseState& cs, colltest::v1::Variant variant, uint32_t m, uint32_t slot);
  void Check(CaseState& cs, uint64_t call, uint32_t m);
  uint32_t GridFor(const CaseState& cs, colltest::v1::Variant variant, uint32_t m) const;
  template <DType D>
  void LaunchTyped(CaseState& cs, colltest::v1::Variant variant, const CallArgs& args,
                   uint32_t grid);

  CpuBackendOptions options_;
  // The rules in force for the case running now: the backend's, plus an injected fault's.
  ProtocolBreaks case_breaks_;
  worker::FaultPlan fault_;
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

  struct Armed {
    DType dtype = DType::kBf16;
    size_t bytes = 0;
  };
  Armed lamport_armed_;
  Armed tb_armed_;
};

}  // namespace colltest::cpu
