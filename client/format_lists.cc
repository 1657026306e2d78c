// The `devices` listing.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/format.h"
#include "client/format_groups.h"
#include "client/format_json.h"
#include "client/text_table.h"
#include "common/names.h"
#include "nlohmann/json.hpp"

namespace colltest::client {
namespace {

absl::Status TableOrJsonOnly(absl::string_view command, OutputFormat format) {
  return absl::InvalidArgumentError(
      absl::StrCat("--format: ", command, " prints table or json, not ", OutputFormatName(format)));
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
      list.push_back(std::move(device));
    }
    out["devices"] = std::move(list);
    out["groups"] = GroupsJson(devices.groups());
    out["machine"] = MachineJson(devices.machine());
    return DumpJson(out);
  }
  if (format != OutputFormat::kTable) return TableOrJsonOnly("devices", format);

  using Align = TextTable::Align;
  TextTable table({{"index", Align::kRight},
                   {"name", Align::kLeft},
                   {"memory GiB", Align::kRight},
                   {"backend", Align::kLeft},
                   {"uuid", Align::kLeft},
                   {"pci bus id", Align::kLeft},
                   {"serial", Align::kLeft}});
  for (const v1::Device& d : devices.devices()) {
    table.AddRow({absl::StrCat(d.index()), d.name(),
                  absl::StrFormat("%.1f", d.memory_bytes() / double{1 << 30}), d.backend(),
                  d.uuid(), d.pci_bus_id(), d.serial()});
  }
  std::string out =
      absl::StrCat("backend ", devices.backend(), "  version ", devices.version(), "  max world ",
                   devices.max_world_size(), "\n", MachineIdentityLine(devices.machine()),
                   "variants: ", absl::StrJoin(variants, ", "), "\n", table.Render());
  // Which pairs the one-stage and Lamport kernels can reach over NVLink or xGMI, which only over
  // PCIe: the first thing to look at when one pair is slow.
  if (const std::string links = TopologyTable(devices.machine()); !links.empty()) {
    absl::StrAppend(&out, "\n", links);
  }
  // Omitted when empty: a server has no group before its first run, and a header-only table would
  // read as if one had gone missing.
  if (!devices.groups().empty()) absl::StrAppend(&out, "\n", GroupsTable(devices.groups()));
  return out;
}

}  // namespace colltest::client
