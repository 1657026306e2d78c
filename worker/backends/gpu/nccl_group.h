// The `nccl` variant's communicator: rank 0 makes the ncclUniqueId in Init, the controller
// broadcasts it in ConnectRequest, and every rank joins the communicator in Connect (outside any
// graph capture). A call is ncclAllReduce (sum, in T) from the rank's registered input into a
// private staging buffer, then our fused residual + RMSNorm kernel reading the staging buffer.
// Built without NCCL (COLLTEST_HAVE_NCCL unset: worker/backends/gpu/CMakeLists.txt then leaves
// nccl_*.cc/.cu out), the inline stand-ins at the end say why and the variant answers UNSUPPORTED.
// This header does not include nccl.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "worker/backends/gpu/gpu_runtime.h"
#include "worker/backends/gpu/kernels.h"

namespace colltest::gpu {

class NcclGroup {
 public:
  NcclGroup();
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  // Rank 0: the bytes of a fresh ncclUniqueId, or empty (the reason is kept for reason()).
  std::string CreateUniqueId();
  // Joins the communicator of `id` (blocks until every rank joined) and allocates `capacity`
  // bytes of staging. Never fails the caller: a failure is kept and reported by reason().
  void Connect(const std::string& id, uint32_t rank, uint32_t world, size_t capacity);
  // Leaves the group out of NCCL for `reason` (kept for reason()): nccl cases are UNSUPPORTED.
  void Refuse(std::string reason) {
    Release();
    reason_ = std::move(reason);
  }
  // Whether nccl cases can run; otherwise reason() says why.
  bool ready() const;
  const std::string& reason() const { return reason_; }
  // NCCL's version at run time, e.g. "2.28.3", or empty.
  std::string RuntimeVersion() const;

  // Enqueues one call on `stream`: the all-reduce of m * n elements at `input` into the staging
  // buffer, then the norm kernel (grid: one block per row, at most `max_grid`).
  absl::Status Launch(DType dtype, const void* input, const CallArgs& args, uint32_t max_grid,
                      uint32_t threads, Stream stream);
  // Aborts the communicator (local: never waits for peers) and frees the staging buffer.
  void Release();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string reason_;
};

#if !(defined(COLLTEST_HAVE_NCCL) && COLLTEST_HAVE_NCCL)
struct NcclGroup::Impl {};
inline NcclGroup::NcclGroup()
    : reason_(
          "nccl: this worker was built without NCCL (nccl.h or libnccl not found at build "
          "time)") {}
inline NcclGroup::~NcclGroup() = default;
inline std::string NcclGroup::CreateUniqueId() { return ""; }
inline void NcclGroup::Connect(const std::string&, uint32_t, uint32_t, size_t) {}
inline bool NcclGroup::ready() const { return false; }
inline std::string NcclGroup::RuntimeVersion() const { return ""; }
inline absl::Status NcclGroup::Launch(DType, const void*, const CallArgs&, uint32_t, uint32_t,
                                      Stream) {
  return absl::FailedPreconditionError(reason_);
}
inline void NcclGroup::Release() {}
#endif

}  // namespace colltest::gpu
