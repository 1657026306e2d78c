#include "client/format/format_groups.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/format/text_table.h"
#include "common/names.h"

namespace colltest::client {

std::string GroupsTable(const Groups& groups) {
  using Align = TextTable::Align;
  TextTable table({{"group", Align::kLeft},
                   {"state", Align::kLeft},
                   {"recoveries", Align::kRight},
                   {"last recovery ms", Align::kRight},
                   {"message", Align::kLeft}});
  for (const v1::GroupHealth& g : groups) {
    // A group that never recovered has no recovery time; a dash, not a 0 that reads as instant.
    table.AddRow({absl::StrJoin(g.devices(), ","), std::string(common::GroupStateName(g.state())),
                  absl::StrCat(g.recoveries()),
                  g.last_recovery_ms() > 0 ? absl::StrFormat("%.1f", g.last_recovery_ms()) : "-",
                  g.message()});
  }
  return table.Render();
}

nlohmann::ordered_json GroupsJson(const Groups& groups) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const v1::GroupHealth& g : groups) {
    nlohmann::ordered_json group = nlohmann::ordered_json::object();
    group["devices"] = std::vector<uint32_t>(g.devices().begin(), g.devices().end());
    group["state"] = std::string(common::GroupStateName(g.state()));
    group["message"] = g.message();
    group["since_unix_ms"] = g.since_unix_ms();
    group["recoveries"] = g.recoveries();
    group["last_recovery_ms"] = g.last_recovery_ms();
    group["respawns"] = g.respawns();
    list.push_back(std::move(group));
  }
  return list;
}

const v1::Device* FindDevice(const v1::MachineIdentity& machine, uint32_t index) {
  for (const v1::Device& d : machine.devices()) {
    if (d.index() == index) return &d;
  }
  return nullptr;
}

std::string MachineIdentityLine(const v1::MachineIdentity& m) {
  if (m.key().empty() && m.hostname().empty()) return "";
  return absl::StrCat("machine ", m.hostname(), " (key ", m.key(), ")  driver ", m.driver_version(),
                      "  runtime ", m.runtime_version(), "  colltest ", m.colltest_version(), " (",
                      m.build_commit(), ")\n");
}

std::string LinkCell(const v1::Link& link) {
  const std::string kind = absl::AsciiStrToLower(link.kind());
  if (kind == "nvlink") return link.lanes() > 0 ? absl::StrCat("NV", link.lanes()) : "NVL";
  if (kind == "none") return "-";
  // An older server sends no kind: peer access is all it knew.
  if (kind.empty()) return link.p2p() ? "P2P" : "-";
  return absl::AsciiStrToUpper(kind);
}

std::string TopologyTable(const v1::MachineIdentity& machine) {
  if (machine.devices_size() < 2) return "";
  std::vector<uint32_t> indices;
  for (const v1::Device& d : machine.devices()) indices.push_back(d.index());
  std::sort(indices.begin(), indices.end());
  std::map<std::pair<uint32_t, uint32_t>, std::string> cells;
  bool same_gpu = false;
  for (const v1::Link& l : machine.links()) {
    cells[{l.a(), l.b()}] = LinkCell(l);
    cells[{l.b(), l.a()}] = LinkCell(l);
    same_gpu = same_gpu || absl::AsciiStrToLower(l.kind()) == "same_gpu";
  }
  std::vector<TextTable::Column> columns = {{"device", TextTable::Align::kLeft}};
  for (uint32_t i : indices) columns.push_back({absl::StrCat(i), TextTable::Align::kLeft});
  TextTable table(std::move(columns));
  for (uint32_t row : indices) {
    std::vector<std::string> line = {absl::StrCat(row)};
    for (uint32_t column : indices) {
      auto cell = cells.find({row, column});
      line.push_back(row == column ? "X" : cell != cells.end() ? cell->second : "?");
    }
    table.AddRow(std::move(line));
  }
  return absl::StrCat(
      "links: NV<n> n NVLinks, NVL NVLink, XGMI, PCIE, P2P peer access over an unknown link, SHM "
      "shared memory, - no peer access, ? not reported",
      same_gpu ? ", SAME_GPU two slots of one GPU (no link)\n" : "\n", table.Render());
}

}  // namespace colltest::client
