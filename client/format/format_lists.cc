// The `devices` listing.
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/format/format.h"
#include "client/format/format_groups.h"
#include "client/format/format_json.h"
#include "client/format/result_view.h"
#include "client/format/text_table.h"
#include "common/names.h"
#include "nlohmann/json.hpp"

namespace colltest::client {
namespace {

absl::Status TableOrJsonOnly(absl::string_view command, OutputFormat format) {
  return absl::InvalidArgumentError(
      absl::StrCat("--format: ", command, " prints table or json, not ", OutputFormatName(format)));
}

// colltestd --ranks-per-gpu above 1: its devices are slots of GPUs, and the table says of which.
bool ListsSlots(const v1::ListDevicesResponse& devices) {
  if (MachineRanksPerGpu(devices.machine()) > 1) return true;
  for (const v1::Device& d : devices.devices()) {
    if (d.slot() > 0) return true;
  }
  return false;
}

std::string DevicesTable(const v1::ListDevicesResponse& devices) {
  using Align = TextTable::Align;
  const bool slots = ListsSlots(devices);
  std::vector<TextTable::Column> columns = {{"index", Align::kRight}};
  if (slots) columns.insert(columns.end(), {{"gpu", Align::kRight}, {"slot", Align::kRight}});
  columns.insert(columns.end(), {{"name", Align::kLeft},
                                 {"memory GiB", Align::kRight},
                                 {"backend", Align::kLeft},
                                 {"uuid", Align::kLeft},
                                 {"pci bus id", Align::kLeft},
                                 {"serial", Align::kLeft}});
  TextTable table(std::move(columns));
  for (const v1::Device& d : devices.devices()) {
    std::vector<std::string> row = {absl::StrCat(d.index())};
    if (slots) row.insert(row.end(), {absl::StrCat(PhysicalIndex(d)), absl::StrCat(d.slot())});
    row.insert(row.end(), {d.name(), absl::StrFormat("%.1f", d.memory_bytes() / double{1 << 30}),
                           d.backend(), d.uuid(), d.pci_bus_id(), d.serial()});
    table.AddRow(std::move(row));
  }
  std::string out = table.Render();
  if (slots) {
    absl::StrAppend(&out, "ranks per GPU: ", MachineRanksPerGpu(devices.machine()),
                    " (each GPU is listed once per slot; ranks on slots of one GPU share it and "
                    "measure kernel overhead, not a link)\n");
  }
  return out;
}

// The kernel plugins as --check-plugin prints them (docs/plugins.md), with the enums' names.
Json KernelPluginsJson(const v1::ListDevicesResponse& devices) {
  Json list = Json::array();
  for (const v1::KernelPlugin& p : devices.kernel_plugins()) {
    Json plugin = Json::object();
    plugin["path"] = p.path();
    plugin["sha256"] = p.sha256();
    plugin["loaded"] = p.loaded();
    plugin["refused"] = p.refused();
    plugin["name"] = p.name();
    plugin["version"] = p.version();
    plugin["variant"] = p.variant();
    plugin["backends"] = std::vector<std::string>(p.backends().begin(), p.backends().end());
    std::vector<std::string> dtypes, epilogues;
    for (int d : p.dtypes()) dtypes.emplace_back(common::DTypeName(static_cast<v1::DType>(d)));
    for (int e : p.epilogues()) {
      epilogues.emplace_back(common::EpilogueName(static_cast<v1::Epilogue>(e)));
    }
    plugin["dtypes"] = dtypes;
    plugin["world_sizes"] = std::vector<uint32_t>(p.world_sizes().begin(), p.world_sizes().end());
    plugin["epilogues"] = epilogues;
    plugin["graph_capture"] = p.graph_capture();
    plugin["max_elements"] = p.max_elements();
    list.push_back(std::move(plugin));
  }
  return list;
}

// One row a plugin: what it offers, or why it was refused.
std::string KernelPluginsTable(const v1::ListDevicesResponse& devices) {
  using Align = TextTable::Align;
  TextTable table({{"kernel plugin", Align::kLeft},
                   {"version", Align::kLeft},
                   {"sha256", Align::kLeft},
                   {"worlds", Align::kLeft},
                   {"graph", Align::kLeft},
                   {"path", Align::kLeft},
                   {"refused", Align::kLeft}});
  for (const v1::KernelPlugin& p : devices.kernel_plugins()) {
    table.AddRow({p.variant().empty() ? "-" : p.variant(), p.version(), p.sha256().substr(0, 12),
                  absl::StrJoin(p.world_sizes(), ","),
                  p.variant().empty() ? "" : (p.graph_capture() ? "yes" : "no"), p.path(),
                  p.refused()});
  }
  return table.Render();
}

}  // namespace

absl::StatusOr<std::string> FormatDevices(const v1::ListDevicesResponse& devices,
                                          OutputFormat format) {
  std::vector<std::string> variants;
  for (int v : devices.variants()) {
    variants.emplace_back(common::VariantName(static_cast<v1::Variant>(v)));
  }
  if (format == OutputFormat::kJson) {
    Json out = DocumentJson("colltest.devices");
    out["backend"] = devices.backend();
    out["version"] = devices.version();
    out["max_world_size"] = devices.max_world_size();
    out["variants"] = variants;
    Json list = Json::array();
    for (const v1::Device& d : devices.devices()) {
      Json device = Json::object();
      device["index"] = d.index();
      device["name"] = d.name();
      device["memory_bytes"] = d.memory_bytes();
      device["backend"] = d.backend();
      device["uuid"] = d.uuid();
      device["pci_bus_id"] = d.pci_bus_id();
      device["serial"] = d.serial();
      device["physical_index"] = PhysicalIndex(d);
      device["slot"] = d.slot();
      list.push_back(std::move(device));
    }
    out["devices"] = std::move(list);
    out["groups"] = GroupsJson(devices.groups());
    out["machine"] = MachineJson(devices.machine());
    out["kernel_plugins"] = KernelPluginsJson(devices);
    return DumpJson(out);
  }
  if (format != OutputFormat::kTable) return TableOrJsonOnly("devices", format);

  std::string out =
      absl::StrCat("backend ", devices.backend(), "  version ", devices.version(), "  max world ",
                   devices.max_world_size(), "\n", MachineIdentityLine(devices.machine()),
                   "variants: ", absl::StrJoin(variants, ", "), "\n", DevicesTable(devices));
  // Which pairs the one-stage and Lamport kernels can reach over NVLink or xGMI, which only over
  // PCIe: the first thing to look at when one pair is slow.
  if (const std::string links = TopologyTable(devices.machine()); !links.empty()) {
    absl::StrAppend(&out, "\n", links);
  }
  // Omitted when empty: a server has no group before its first run, and a header-only table would
  // read as if one had gone missing.
  if (!devices.groups().empty()) absl::StrAppend(&out, "\n", GroupsTable(devices.groups()));
  if (!devices.kernel_plugins().empty()) {
    absl::StrAppend(&out, "\n", KernelPluginsTable(devices));
  }
  return out;
}

}  // namespace colltest::client
