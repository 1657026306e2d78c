#include "worker/backends/cpu/cpu_backend.h"

#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/shm_names.h"
#include "worker/backends/cpu/barrier.h"

namespace colltest::cpu {

std::unique_ptr<worker::Backend> CreateCpuBackend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

CpuBackend::CpuBackend(const CpuBackendOptions& options) : options_(options) {}

CpuBackend::~CpuBackend() { Release(); }

void CpuBackend::Release() {
  pool_.reset();
  peers_.clear();
  own_ = ShmSegment();
  connected_ = false;
}

absl::StatusOr<colltest::worker::v1::InitReply> CpuBackend::Init(
    const colltest::worker::v1::InitRequest& request) {
  if (own_.data() != nullptr) return absl::FailedPreconditionError("worker already initialised");
  if (request.world_size() < 1 || request.world_size() > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("world_size = ", request.world_size(), ": must be in 1..", kMaxRanks));
  }
  if (request.rank() >= request.world_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank = ", request.rank(), ": must be < world_size"));
  }
  rank_ = request.rank();
  world_ = request.world_size();
  layout_ =
      MakeRankLayout(request.max_case_bytes() > 0 ? request.max_case_bytes() : 32u << 20, world_);
  // The name carries the controller's pid so that it can sweep segments a killed worker left.
  const std::string name = common::ShmSegmentName(getppid(), getpid(), options_.device);
  absl::StatusOr<ShmSegment> seg = ShmSegment::Create(name, layout_.total);
  if (!seg.ok()) return seg.status();
  own_ = std::move(*seg);
  pool_ = std::make_unique<BlockPool>(options_.resident_blocks, &pending_);

  colltest::worker::v1::InitReply reply;
  auto* h = reply.add_handles();
  h->set_name("rank_buffers");
  h->set_handle(name);
  h->set_bytes(layout_.total);
  reply.set_device_name(absl::StrCat("cpu rank ", options_.device));
  reply.set_resident_blocks(pool_->resident());
  reply.set_pid(static_cast<uint32_t>(getpid()));
  return reply;
}

absl::Status CpuBackend::Connect(const colltest::worker::v1::ConnectRequest& request) {
  if (own_.data() == nullptr) return absl::FailedPreconditionError("Connect before Init");
  if (request.peers_size() != static_cast<int>(world_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("peers: ", request.peers_size(), " entries for a world of ", world_));
  }
  peers_.clear();
  peers_.resize(world_);
  group_ = GroupView{};
  group_.rank = rank_;
  group_.world = world_;
  std::vector<bool> seen(world_, false);
  for (const auto& peer : request.peers()) {
    if (peer.rank() >= world_ || seen[peer.rank()] || peer.handles_size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("peers: bad entry for rank ", peer.rank()));
    }
    seen[peer.rank()] = true;
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
  if (variant == colltest::v1::VARIANT_LAMPORT || variant == colltest::v1::VARIANT_LAMPORT_TB) {
    Armed& a = variant == colltest::v1::VARIANT_LAMPORT ? lamport_armed_ : tb_armed_;
    if (a.dtype != dtype || a.bytes < bytes) {
      // A new dtype has a different sentinel: re-arm everything armed so far.
      const size_t from = a.dtype == dtype ? a.bytes : 0;
      const size_t to = std::max(a.bytes, bytes);
      for (uint8_t* region : ArmedRegions(variant)) ArmStaging(dtype, region + from, to - from);
      a = {dtype, to};
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
  std::memset(group_.self().tb_control(), 0, sizeof(TripleBufferControl));
  for (uint8_t* region : ArmedRegions(colltest::v1::VARIANT_LAMPORT)) {
    ArmStaging(lamport_armed_.dtype, region, lamport_armed_.bytes);
  }
  for (uint8_t* region : ArmedRegions(colltest::v1::VARIANT_LAMPORT_TB)) {
    ArmStaging(tb_armed_.dtype, region, tb_armed_.bytes);
  }
  return absl::OkStatus();
}

}  // namespace colltest::cpu
