// Where each device index of colltestd lives: the GPU (physical index) a worker of that device is
// started on. With --ranks-per-gpu N every GPU offers N devices (slots), so that a W-rank group can
// live on fewer GPUs (docs/shared-gpu.md); each slot is still one worker process of its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>

#include "absl/types/span.h"

namespace colltest::server {

// Link.kind of two slots of one GPU (colltestd --ranks-per-gpu).
inline constexpr char kSameGpuLink[] = "same_gpu";

class DevicePlacement {
 public:
  // Device `index` runs on GPU `physical` (the runtime's own numbering).
  void Place(uint32_t index, uint32_t physical) { physical_[index] = physical; }

  // The GPU of device `index`; the index itself where nothing was placed (one device per GPU,
  // virtual devices).
  uint32_t Physical(uint32_t index) const {
    auto it = physical_.find(index);
    return it == physical_.end() ? index : it->second;
  }

  // The most device indices placed on one GPU: the ranks that may run on it at once (1 when
  // nothing was placed).
  uint32_t SlotsPerDevice() const {
    std::map<uint32_t, uint32_t> count;
    uint32_t most = 1;
    for (const auto& [index, physical] : physical_) most = std::max(most, ++count[physical]);
    return most;
  }

  // The most of `devices` that share one GPU: 1 when each has a GPU of its own.
  uint32_t RanksOnOneDevice(absl::Span<const uint32_t> devices) const {
    std::map<uint32_t, uint32_t> count;
    uint32_t most = devices.empty() ? 0 : 1;
    for (uint32_t d : devices) most = std::max(most, ++count[Physical(d)]);
    return most;
  }

 private:
  std::map<uint32_t, uint32_t> physical_;
};

}  // namespace colltest::server
