// WithSlotsPerGpu (server/devices/backend_probe.h): several ranks on one GPU.
#include <map>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/devices/backend_probe.h"
#include "server/devices/device_placement.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;

// The link between slot devices `a` < `b` (indices into `slots`): kSameGpuLink on one GPU, else the
// link the probe reported between their GPUs (none when it reported none).
std::optional<v1::Link> SlotLink(const std::vector<v1::Device>& slots, uint32_t a, uint32_t b,
                                 const std::map<std::pair<uint32_t, uint32_t>, v1::Link>& gpu) {
  v1::Link link;
  const uint32_t pa = slots[a].physical_index(), pb = slots[b].physical_index();
  if (pa == pb) {
    // Both ranks reach the other's buffers in their own GPU's memory: no link is crossed.
    link.set_p2p(true);
    link.set_native_atomics(true);
    link.set_kind(kSameGpuLink);
  } else {
    auto it = gpu.find({std::min(pa, pb), std::max(pa, pb)});
    if (it == gpu.end()) return std::nullopt;
    link = it->second;
  }
  link.set_a(a);
  link.set_b(b);
  return link;
}

}  // namespace

DevicePlacement PlacementOf(const BackendInfo& info) {
  DevicePlacement placement;
  for (const v1::Device& d : info.devices) placement.Place(d.index(), d.physical_index());
  return placement;
}

absl::StatusOr<BackendInfo> WithSlotsPerGpu(BackendInfo info, uint32_t ranks_per_gpu) {
  if (ranks_per_gpu <= 1) return info;
  if (!info.capabilities.reports_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--ranks-per-gpu ", ranks_per_gpu, ": the ", info.backend,
        " backend has no GPUs to share; its ranks are --cpu-ranks (use --ranks-per-gpu with "
        "--backend cuda or hip)"));
  }
  std::map<std::pair<uint32_t, uint32_t>, v1::Link> gpu_links;
  for (const v1::Link& l : info.links) gpu_links[{l.a(), l.b()}] = l;
  std::vector<v1::Device> slots;
  const uint32_t gpus = static_cast<uint32_t>(info.devices.size());
  for (uint32_t slot = 0; slot < ranks_per_gpu; ++slot) {
    for (uint32_t g = 0; g < gpus; ++g) {
      v1::Device d = info.devices[g];
      d.set_physical_index(info.devices[g].index());
      d.set_slot(slot);
      d.set_index(slot * gpus + g);
      slots.push_back(std::move(d));
    }
  }
  info.links.clear();
  for (uint32_t a = 0; a < slots.size(); ++a) {
    for (uint32_t b = a + 1; b < slots.size(); ++b) {
      if (auto link = SlotLink(slots, a, b, gpu_links)) info.links.push_back(*std::move(link));
    }
  }
  info.devices = std::move(slots);
  info.ranks_per_gpu = ranks_per_gpu;
  return info;
}

}  // namespace colltest::server
