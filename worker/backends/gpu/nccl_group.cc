#include "worker/backends/gpu/nccl_group.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "worker/backends/gpu/nccl_kernels.h"

// Compiled only when NCCL was found (worker/backends/gpu/CMakeLists.txt); the guard keeps a stray
// build safe.
#if defined(COLLTEST_HAVE_NCCL) && COLLTEST_HAVE_NCCL
#if COLLTEST_GPU_VENDOR_HIP
#include <rccl/rccl.h>
#else
#include <nccl.h>
#endif
#define COLLTEST_NCCL_BUILT 1
#else
#define COLLTEST_NCCL_BUILT 0
#endif

namespace colltest::gpu {

#if COLLTEST_NCCL_BUILT

struct NcclGroup::Impl {
  ncclComm_t comm = nullptr;
  void* staging = nullptr;
  size_t capacity = 0;
  std::string id;  // the id the communicator was made from
};

namespace {

std::string NcclError(ncclResult_t r, const char* what) {
  return absl::StrCat("nccl: ", what, ": ", ncclGetErrorString(r));
}

bool ToNcclType(DType t, ncclDataType_t* out) {
  switch (t) {
    case DType::kBf16:
      *out = ncclBfloat16;
      return true;
    case DType::kFp16:
      *out = ncclFloat16;
      return true;
    case DType::kFp32:
      *out = ncclFloat32;
      return true;
  }
  return false;
}

}  // namespace

NcclGroup::NcclGroup() : impl_(std::make_unique<Impl>()) {
  reason_ = "nccl: the communicator is not connected";
}
NcclGroup::~NcclGroup() { Release(); }

std::string NcclGroup::CreateUniqueId() {
  ncclUniqueId id;
  if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
    reason_ = NcclError(r, "ncclGetUniqueId on rank 0");
    return "";
  }
  return std::string(reinterpret_cast<const char*>(&id), sizeof id);
}

void NcclGroup::Connect(const std::string& id, uint32_t rank, uint32_t world, size_t capacity) {
  if (impl_->comm != nullptr && impl_->id == id && impl_->capacity >= capacity) return;
  Release();
  if (id.size() != sizeof(ncclUniqueId)) {
    reason_ = id.empty() ? "nccl: rank 0 sent no NCCL unique id (ncclGetUniqueId failed there)"
                         : absl::StrCat("nccl: the unique id has ", id.size(), " bytes, not ",
                                        sizeof(ncclUniqueId));
    return;
  }
  ncclUniqueId uid;
  std::memcpy(&uid, id.data(), sizeof uid);
  // Collective: blocks until every rank of the group called it (Connect runs on every rank at once,
  // under the controller's rendezvous deadline).
  if (ncclResult_t r =
          ncclCommInitRank(&impl_->comm, static_cast<int>(world), uid, static_cast<int>(rank));
      r != ncclSuccess) {
    impl_->comm = nullptr;
    reason_ = NcclError(r, "ncclCommInitRank");
    return;
  }
  if (Error e = Malloc(&impl_->staging, std::max<size_t>(capacity, 16)); e != kSuccess) {
    impl_->staging = nullptr;
    reason_ = absl::StrCat("nccl: allocate staging: ", ErrorString(e));
    ncclCommAbort(impl_->comm);
    impl_->comm = nullptr;
    return;
  }
  impl_->capacity = capacity;
  impl_->id = id;
  reason_.clear();
}

bool NcclGroup::ready() const { return impl_->comm != nullptr && impl_->staging != nullptr; }

std::string NcclGroup::RuntimeVersion() const {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "";
  return absl::StrCat(v / 10000, ".", v / 100 % 100, ".", v % 100);
}

absl::Status NcclGroup::Launch(DType dtype, const void* input, const CallArgs& args,
                               uint32_t max_grid, uint32_t threads, Stream stream) {
  if (!ready()) return absl::FailedPreconditionError(reason_);
  const size_t count = static_cast<size_t>(args.m) * args.n;
  if (count * ElemBytes(dtype) > impl_->capacity) {
    return absl::InvalidArgumentError("nccl: the case exceeds the staging buffer");
  }
  ncclDataType_t type;
  if (!ToNcclType(dtype, &type)) return absl::InvalidArgumentError("nccl: unknown dtype");
  // Stream is cudaStream_t (hipStream_t): NCCL enqueues on our stream, also while it is being
  // captured into a graph (NCCL collectives are capturable).
  if (ncclResult_t r =
          ncclAllReduce(input, impl_->staging, count, type, ncclSum, impl_->comm, stream);
      r != ncclSuccess) {
    return absl::InternalError(NcclError(r, "ncclAllReduce"));
  }
  const uint32_t grid = std::max(1u, std::min(args.m, max_grid));
  const KernelStatus norm = LaunchNormFromSums(dtype, impl_->staging, args, grid, threads, stream);
  if (!norm.ok()) {
    return absl::InternalError(absl::StrCat("nccl: norm kernel: ", KernelStatusText(norm)));
  }
  return absl::OkStatus();
}

void NcclGroup::Release() {
  // Abort, not Destroy: local, never waits for a peer that may be gone.
  if (impl_->comm != nullptr) ncclCommAbort(impl_->comm);
  impl_->comm = nullptr;
  if (impl_->staging != nullptr) Free(impl_->staging);
  impl_->staging = nullptr;
  impl_->capacity = 0;
  impl_->id.clear();
  reason_ = "nccl: the communicator is not connected";
}

#endif

}  // namespace colltest::gpu
