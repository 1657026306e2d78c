#include "client/format/result_view.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/element_size.h"
#include "common/names.h"

namespace colltest::client {

v1::Variant EffectiveVariant(const v1::CaseResult& c) {
  return c.resolved_variant() != v1::VARIANT_UNSPECIFIED ? c.resolved_variant() : c.variant();
}

std::string VariantLabel(const v1::CaseResult& c) {
  const v1::Variant effective = EffectiveVariant(c);
  if (effective == c.variant()) return common::KernelName(c);
  // "auto(plugin:NAME)" when `auto` picked a kernel plugin.
  return absl::StrCat(common::VariantName(c.variant()), "(",
                      common::KernelName(effective, c.plugin().name()), ")");
}

uint64_t CaseBytes(const v1::CaseResult& c) {
  return static_cast<uint64_t>(c.m()) * c.n() * common::ElementBytes(c.dtype());
}

double RankBusBandwidth(const v1::CaseResult& c, const v1::RankResult& r) {
  const double case_us = c.timing().median_us();
  const double rank_us = r.timing().median_us();
  if (case_us <= 0 || rank_us <= 0) return 0;
  return c.busbw_gbps() * case_us / rank_us;
}

uint32_t RanksPerGpu(const v1::RunResult& run) {
  return run.ranks_per_gpu() == 0 ? 1 : run.ranks_per_gpu();
}

bool SharedGpu(const v1::RunResult& run) { return RanksPerGpu(run) > 1 || run.time_sliced(); }

std::string SharedGpuNote(const v1::RunResult& run) {
  if (!SharedGpu(run)) return "";
  if (run.time_sliced()) {
    return absl::StrCat("ranks share a time-sliced GPU (", RanksPerGpu(run),
                        " per GPU): timings are meaningless (time-sliced), not a link "
                        "measurement; busbw is not a link figure");
  }
  return absl::StrCat("ranks share a GPU (", RanksPerGpu(run),
                      " per GPU): times are kernel overhead, not a link measurement; busbw is not "
                      "a link figure");
}

uint32_t MachineRanksPerGpu(const v1::MachineIdentity& machine) {
  return machine.ranks_per_gpu() == 0 ? 1 : machine.ranks_per_gpu();
}

uint32_t PhysicalIndex(const v1::Device& device) {
  if (device.physical_index() == 0 && device.slot() == 0) return device.index();
  return device.physical_index();
}

StatusCounts CountStatuses(const v1::RunResult& run) {
  StatusCounts counts;
  for (const v1::CaseResult& c : run.cases()) {
    switch (c.status()) {
      case v1::CASE_STATUS_OK:
        ++counts.ok;
        break;
      case v1::CASE_STATUS_WRONG:
        ++counts.wrong;
        break;
      case v1::CASE_STATUS_HANG:
        ++counts.hang;
        break;
      case v1::CASE_STATUS_ERROR:
        ++counts.error;
        break;
      case v1::CASE_STATUS_UNSUPPORTED:
        ++counts.unsupported;
        break;
      default:
        ++counts.unspecified;
        break;
    }
  }
  return counts;
}

std::string StatusCountsLine(const StatusCounts& counts) {
  const int total = counts.ok + counts.wrong + counts.hang + counts.error + counts.unsupported +
                    counts.unspecified;
  std::vector<std::string> parts;
  const std::pair<int, const char*> items[] = {
      {counts.ok, "OK"},
      {counts.wrong, "WRONG"},
      {counts.hang, "HANG"},
      {counts.error, "ERROR"},
      {counts.unsupported, "UNSUPPORTED"},
      {counts.unspecified, "UNSPECIFIED"},
  };
  for (const auto& [count, name] : items) {
    if (count > 0) parts.push_back(absl::StrCat(count, " ", name));
  }
  std::string line = absl::StrCat(total, total == 1 ? " case" : " cases");
  if (!parts.empty()) absl::StrAppend(&line, ": ", absl::StrJoin(parts, ", "));
  return line;
}

bool RunAborted(v1::RunState state) {
  return state == v1::RUN_STATE_CANCELLED || state == v1::RUN_STATE_FAILED ||
         state == v1::RUN_STATE_INTERRUPTED;
}

std::string TargetDevices(const v1::HealthTarget& t) { return absl::StrJoin(t.devices(), "-"); }

int32_t SuspectDevice(const v1::HealthTarget& t) {
  return t.status() == v1::CASE_STATUS_HANG && t.suspect_peer() >= 0 ? t.suspect_peer() : -1;
}

}  // namespace colltest::client
