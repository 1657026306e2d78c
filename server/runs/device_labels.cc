#include "server/runs/device_labels.h"

#include <iterator>

#include "absl/strings/str_cat.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

DeviceLabels::DeviceLabels(const v1::MachineIdentity& machine) : hostname_(machine.hostname()) {
  for (const v1::Device& d : machine.devices()) {
    gpu_of_device_[d.index()] = d.physical_index();
    ++slots_[d.physical_index()];
    // Slots of one GPU carry the GPU's UUID, bus id and name: the first one seen stands for all.
    gpus_.try_emplace(d.physical_index(),
                      GpuLabels{d.physical_index(), d.uuid(), d.pci_bus_id(), d.name()});
  }
}

std::vector<GpuLabels> DeviceLabels::Gpus() const {
  std::vector<GpuLabels> gpus;
  for (const auto& [index, labels] : gpus_) gpus.push_back(labels);
  return gpus;
}

GpuLabels DeviceLabels::GpuOf(uint32_t device) const {
  const auto slot = gpu_of_device_.find(device);
  if (slot == gpu_of_device_.end()) return GpuLabels{device, "", "", ""};
  return gpus_.at(slot->second);
}

std::vector<std::pair<GpuLabels, GpuLabels>> DeviceLabels::Links() const {
  std::vector<std::pair<GpuLabels, GpuLabels>> links;
  for (auto a = gpus_.begin(); a != gpus_.end(); ++a) {
    // Two slots of one GPU form a pair too; the check runs it (without a bandwidth figure).
    if (slots_.at(a->first) > 1) links.emplace_back(a->second, a->second);
    for (auto b = std::next(a); b != gpus_.end(); ++b) links.emplace_back(a->second, b->second);
  }
  return links;
}

LabelSet DeviceLabels::Device(const GpuLabels& gpu) const {
  return {{"gpu", absl::StrCat(gpu.gpu)},
          {"UUID", gpu.uuid},
          {"pci_bus_id", gpu.pci_bus_id},
          {"modelName", gpu.model},
          {"Hostname", hostname_}};
}

LabelSet DeviceLabels::Link(const GpuLabels& a, const GpuLabels& b) const {
  const GpuLabels& low = a.gpu <= b.gpu ? a : b;
  const GpuLabels& high = a.gpu <= b.gpu ? b : a;
  return {{"gpu", absl::StrCat(low.gpu)},
          {"peer_gpu", absl::StrCat(high.gpu)},
          {"UUID", low.uuid},
          {"peer_UUID", high.uuid},
          {"Hostname", hostname_}};
}

}  // namespace colltest::server
