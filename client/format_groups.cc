#include "client/format_groups.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/names.h"
#include "client/text_table.h"

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
    table.AddRow({absl::StrJoin(g.devices(), ","), std::string(GroupStateName(g.state())),
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
    group["state"] = std::string(GroupStateName(g.state()));
    group["message"] = g.message();
    group["since_unix_ms"] = g.since_unix_ms();
    group["recoveries"] = g.recoveries();
    group["last_recovery_ms"] = g.last_recovery_ms();
    group["respawns"] = g.respawns();
    list.push_back(std::move(group));
  }
  return list;
}

}  // namespace colltest::client
