#include "server/devices/machine_identity.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/stable_hash.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

// "<length>:<bytes>": no two different field lists hash the same text ("ab"+"c" vs "a"+"bc").
void FnvAppendField(uint64_t& h, absl::string_view field) {
  common::Fnv1aAppend(h, absl::StrCat(field.size(), ":"));
  common::Fnv1aAppend(h, field);
}

// The kernel release (uname -r): what a backend of virtual devices (cpu) has as its "runtime". ""
// when uname fails.
std::string KernelRelease() {
  utsname u;
  if (uname(&u) != 0) return "";
  return u.release;
}

}  // namespace

// Only what names the hardware enters the key. Driver, runtime and colltest versions do not: a
// baseline must stay comparable across upgrades (the point of a baseline is to see what an upgrade
// changed), and compare shows both sides' versions next to each other.
std::string MachineKey(const v1::MachineIdentity& machine) {
  std::vector<const v1::Device*> devices;
  for (const v1::Device& d : machine.devices()) devices.push_back(&d);
  std::stable_sort(devices.begin(), devices.end(), [](const v1::Device* a, const v1::Device* b) {
    return a->index() < b->index();
  });
  uint64_t h = common::kFnv1aOffset;
  FnvAppendField(h, machine.hostname());
  FnvAppendField(h, machine.backend());
  for (const v1::Device* d : devices) {
    // A GPU's slots (--ranks-per-gpu) are one machine part: the key stays that of the GPUs, and
    // runs placed differently on them are told apart by RunResult.ranks_per_gpu instead.
    if (d->slot() != 0) continue;
    FnvAppendField(h, d->name());
    FnvAppendField(h, d->uuid());
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

v1::MachineIdentity BuildMachineIdentity(const BackendInfo& info,
                                         const std::string& colltest_version,
                                         const std::string& build_commit) {
  const bool virtual_devices = !info.capabilities.reports_devices();
  v1::MachineIdentity m;
  m.set_hostname(info.hostname.empty() ? HostName() : info.hostname);
  m.set_backend(info.backend);
  for (const v1::Device& d : info.devices) {
    v1::Device& out = *m.add_devices();
    out = d;
    out.set_backend(info.backend);
  }
  m.set_driver_version(virtual_devices ? info.backend : info.driver_version);
  m.set_runtime_version(virtual_devices ? KernelRelease() : info.runtime_version);
  for (const v1::Link& l : info.links) {
    v1::Link& out = *m.add_links();
    out = l;
    // The probe names the link when the runtime or NVML can ("nvlink", "xgmi", "pcie"); an older
    // probe line without a kind still says whether peer access works.
    if (virtual_devices) {
      out.set_kind("shm");
    } else if (l.kind().empty()) {
      out.set_kind(l.p2p() ? "p2p" : "none");
    }
  }
  m.set_colltest_version(colltest_version);
  m.set_build_commit(build_commit);
  m.set_ranks_per_gpu(std::max(1u, info.ranks_per_gpu));
  m.set_key(MachineKey(m));
  return m;
}

uint32_t RanksPerGpu(const v1::MachineIdentity& machine, absl::Span<const uint32_t> devices) {
  // Identities older than the field, and servers with one slot per GPU, place nothing together.
  if (machine.ranks_per_gpu() <= 1) return 1;
  DevicePlacement placement;
  for (const v1::Device& d : machine.devices()) placement.Place(d.index(), d.physical_index());
  return std::max(1u, placement.RanksOnOneDevice(devices));
}

}  // namespace colltest::server
