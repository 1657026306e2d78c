// The label sets of colltestd's per-GPU metrics (docs/metrics.md), named as NVIDIA's
// DCGM-exporter names them (`gpu`, `UUID`, `pci_bus_id`, `modelName`, `Hostname`), so that a
// query can join a colltest verdict with DCGM's telemetry of the same GPU. Built from the
// MachineIdentity colltestd serves; maps a device index (a slot, with colltestd --ranks-per-gpu)
// to the GPU that holds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "colltest/v1/colltest.pb.h"

namespace colltest::server {

// Label name -> value, as prometheus::Labels is (this header stays free of prometheus-cpp).
using LabelSet = std::map<std::string, std::string>;

// One GPU as DCGM-exporter labels it.
struct GpuLabels {
  uint32_t gpu = 0;        // `gpu`: Device.physical_index, the runtime's index of the GPU
  std::string uuid;        // `UUID`: Device.uuid
  std::string pci_bus_id;  // `pci_bus_id`: Device.pci_bus_id as colltest has it (empty on cpu)
  std::string model;       // `modelName`: Device.name
};

class DeviceLabels {
 public:
  DeviceLabels() = default;  // no machine: every device is a GPU known by its index alone
  explicit DeviceLabels(const colltest::v1::MachineIdentity& machine);

  const std::string& hostname() const { return hostname_; }
  // Devices (slots) of the machine; several may share one GPU.
  size_t devices() const { return gpu_of_device_.size(); }
  // The distinct GPUs, by `gpu` ascending.
  std::vector<GpuLabels> Gpus() const;
  // The GPU holding `device`. A device the machine does not list (none should reach the
  // metrics) is a GPU of that index with no other labels, so that its event is still counted.
  GpuLabels GpuOf(uint32_t device) const;
  // Every link a pair health check can judge, as (gpu, peer_gpu) with gpu <= peer_gpu: each pair
  // of distinct GPUs, and a GPU with itself where two of its slots can form a pair.
  std::vector<std::pair<GpuLabels, GpuLabels>> Links() const;

  // {gpu, UUID, pci_bus_id, modelName, Hostname} of `gpu`.
  LabelSet Device(const GpuLabels& gpu) const;
  // {gpu, peer_gpu, UUID, peer_UUID, Hostname}, ordered so that gpu <= peer_gpu.
  LabelSet Link(const GpuLabels& a, const GpuLabels& b) const;

 private:
  std::string hostname_;
  std::map<uint32_t, uint32_t> gpu_of_device_;  // device index -> Device.physical_index
  std::map<uint32_t, GpuLabels> gpus_;          // by physical_index
  std::map<uint32_t, uint32_t> slots_;          // physical_index -> devices on that GPU
};

}  // namespace colltest::server
