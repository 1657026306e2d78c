#include "worker/backends/cpu/cpu_backend.h"

#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/shm_names.h"
#include "common/status_macros.h"
#include "worker/backends/cpu/barrier.h"
#include "worker/case_config.h"

namespace colltest::cpu {

std::unique_ptr<worker::Backend> CreateCpuBackend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

colltest::worker::v1::Capabilities CpuCapabilities() {
  colltest::worker::v1::Capabilities caps;
  for (auto v : {colltest::v1::VARIANT_ONE_STAGE, colltest::v1::VARIANT_TWO_KERNEL,
                 colltest::v1::VARIANT_LAMPORT, colltest::v1::VARIANT_LAMPORT_TB,
                 colltest::v1::VARIANT_LAMPORT_TWO_SHOT}) {
    caps.add_variants(v);
  }
  caps.set_uses_shared_memory_segments(true);  // Init's handle names the segment
  return caps;
}

CpuBackend::CpuBackend(const CpuBackendOptions& options) : options_(options) {}

CpuBackend::~CpuBackend() { Release(); }

absl::StatusOr<colltest::worker::v1::InitReply> CpuBackend::Init(
    const colltest::worker::v1::InitRequest& request) {
  if (own_.data() != nullptr) return absl::FailedPreconditionError("worker already initialised");
  COLLTEST_RETURN_IF_ERROR(worker::CheckInitRequest(request));
  rank_ = request.rank();
  world_ = request.world_size();
  layout_ = MakeRankLayout(worker::CaseCapacityBytes(request), world_);
  // The controller names the segment (its pid in the name lets it sweep what a killed worker
  // left); a worker started without a controller-given prefix names it the same way itself.
  const std::string name = common::ShmSegmentName(
      request.shm_prefix().empty() ? common::ShmSegmentPrefix(getppid(), getpid())
                                   : request.shm_prefix(),
      options_.device);
  absl::StatusOr<ShmSegment> seg = ShmSegment::Create(name, layout_.total);
  if (!seg.ok()) return seg.status();
  own_ = std::move(*seg);
  pool_ = std::make_unique<BlockPool>(options_.resident_blocks, &pending_);

  colltest::worker::v1::InitReply reply;
  auto* h = reply.add_handles();
  h->set_name("rank_buffers");
  h->set_handle(name);
  h->set_bytes(layout_.total);
  workspaces_ = std::make_unique<ShmWorkspaces>(name);
  plugins_.Load(request, COLLTEST_BACKEND_CPU, worker::CaseCapacityBytes(request), *workspaces_,
                reply);
  reply.set_device_name(absl::StrCat("cpu rank ", options_.device));
  reply.set_resident_blocks(pool_->resident());
  reply.set_pid(static_cast<uint32_t>(getpid()));
  colltest::worker::v1::Capabilities caps = CpuCapabilities();
  caps.mutable_kernel_plugins()->Swap(reply.mutable_capabilities()->mutable_kernel_plugins());
  *reply.mutable_capabilities() = std::move(caps);
  return reply;
}

absl::Status CpuBackend::Connect(const colltest::worker::v1::ConnectRequest& request) {
  if (own_.data() == nullptr) return absl::FailedPreconditionError("Connect before Init");
  COLLTEST_RETURN_IF_ERROR(worker::CheckConnectRequest(request, world_));
  peers_ = std::vector<ShmSegment>(world_);  // opened below, kept for the life of the group
  group_ = GroupView{rank_, world_, {}};
  for (const auto& peer : request.peers()) {
    uint8_t* base;
    if (peer.rank() == rank_) {
      base = own_.data();
    } else {
      // Each peer is opened once and kept for the life of the group.
      absl::StatusOr<ShmSegment> seg =
          ShmSegment::Open(peer.handles(0).handle(), peer.handles(0).bytes());
      if (!seg.ok()) return seg.status();
      peers_[peer.rank()] = std::move(*seg);
      base = peers_[peer.rank()].data();
    }
    group_.peers[peer.rank()] = RankMemory{base, &layout_};
  }
  COLLTEST_RETURN_IF_ERROR(plugins_.Connect(request, -1, *workspaces_));
  connected_ = true;
  return absl::OkStatus();
}

std::vector<uint8_t*> CpuBackend::ArmedRegions(colltest::v1::Variant variant) const {
  const RankMemory& self = group_.self();
  if (variant == colltest::v1::VARIANT_LAMPORT) {
    return {options_.breaks.shared_staging ? self.tmp() : self.lamport()};
  }
  std::vector<uint8_t*> slots;
  for (uint32_t b = 0; b < 3; ++b) {
    for (uint32_t r = 0; r < world_; ++r) slots.push_back(self.tb_slot(b, r));
  }
  return slots;
}

bool CpuBackend::EnsureArmed(colltest::v1::Variant variant, DType dtype, size_t bytes) {
  // Host synchronisation: nothing of earlier calls may land over the arming below.
  pending_.Drain();
  if (variant == colltest::v1::VARIANT_LAMPORT || variant == colltest::v1::VARIANT_LAMPORT_TB ||
      variant == colltest::v1::VARIANT_LAMPORT_TWO_SHOT) {
    protocol::Armed& a = variant == colltest::v1::VARIANT_LAMPORT ? lamport_armed_ : tb_armed_;
    if (const auto step = protocol::NextArming(a, variant, dtype, bytes)) {
      for (uint8_t* region : ArmedRegions(variant)) {
        ArmStaging(dtype, region + step->from, step->to - step->from);
      }
      a = step->after;
    }
  }
  // Always meet the peers here, armed or not: it orders this rank's arming before any peer's
  // first store, and a rank that skipped earlier cases (a missing rank) cannot diverge.
  PostedStores posted(&pending_);
  return HostBarrier(group_, guard_, posted);
}

absl::Status CpuBackend::Reset() {
  if (!connected_) return absl::OkStatus();
  // Stores of aborted calls must not land later over the fresh state.
  pending_.Discard();
  std::memset(group_.self().signal(), 0, sizeof(Signal));
  std::memset(group_.self().control(), 0, sizeof(RankControl));
  for (uint8_t* region : ArmedRegions(colltest::v1::VARIANT_LAMPORT)) {
    ArmStaging(lamport_armed_.dtype, region, lamport_armed_.bytes);
  }
  for (uint8_t* region : ArmedRegions(colltest::v1::VARIANT_LAMPORT_TB)) {
    ArmStaging(tb_armed_.dtype, region, tb_armed_.bytes);
  }
  return absl::OkStatus();
}

}  // namespace colltest::cpu
