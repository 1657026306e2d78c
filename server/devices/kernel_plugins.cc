#include "server/devices/kernel_plugins.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "nlohmann/json.hpp"

namespace colltest::server {
namespace {

absl::StatusOr<std::vector<std::string>> SharedObjectsIn(const std::string& dir) {
  struct CloseDir {
    void operator()(DIR* d) const { closedir(d); }
  };
  std::unique_ptr<DIR, CloseDir> handle(opendir(dir.c_str()));
  if (handle == nullptr) return absl::NotFoundError(std::strerror(errno));
  std::vector<std::string> found;
  while (const dirent* entry = readdir(handle.get())) {
    const std::string name = entry->d_name;
    if (name.size() > 3 && absl::EndsWith(name, ".so")) found.push_back(dir + "/" + name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

// The names of json[key] that `parse` knows, as enum values.
template <typename Parse>
void AddNames(const nlohmann::json& json, const char* key, Parse parse,
              google::protobuf::RepeatedField<int>* out) {
  if (!json.contains(key)) return;
  for (const auto& name : json[key]) {
    if (auto value = parse(name.get<std::string>())) out->Add(*value);
  }
}

colltest::v1::KernelPlugin Refused(const std::string& path, std::string why) {
  colltest::v1::KernelPlugin plugin;
  plugin.set_path(path);
  plugin.set_refused(std::move(why));
  return plugin;
}

// What a finished check says: its report, or why there is none.
colltest::v1::KernelPlugin FromOutcome(const std::string& path,
                                       const absl::StatusOr<CommandOutcome>& outcome) {
  if (!outcome.ok()) {
    return Refused(path, absl::StrCat("the check could not start: ", outcome.status().message()));
  }
  if (outcome->timed_out) {
    return Refused(path, absl::StrCat("the check did not finish within ",
                                      absl::FormatDuration(kPluginCheckTimeout),
                                      " (the plugin hung while it loaded)"));
  }
  if (!outcome->exited) {
    return Refused(path, absl::StrCat("the check died (", DescribeEnd(*outcome),
                                      "): the plugin crashed while it loaded"));
  }
  absl::StatusOr<colltest::v1::KernelPlugin> report = ParsePluginReport(outcome->output);
  if (!report.ok()) {
    return Refused(path, absl::StrCat("the check printed no report (", DescribeEnd(*outcome),
                                      "): ", report.status().message()));
  }
  report->set_path(path);
  return *std::move(report);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> KernelPluginPaths(const std::vector<std::string>& paths,
                                                           const std::string& dir, bool dir_given) {
  std::vector<std::string> all = paths;
  if (dir.empty()) return all;
  absl::StatusOr<std::vector<std::string>> found = SharedObjectsIn(dir);
  if (!found.ok()) {
    if (!dir_given) return all;  // the default folder: no plugins installed
    return absl::InvalidArgumentError(
        absl::StrCat("--kernel-plugin-dir ", dir, ": ", found.status().message()));
  }
  all.insert(all.end(), found->begin(), found->end());
  return all;
}

absl::StatusOr<colltest::v1::KernelPlugin> ParsePluginReport(absl::string_view line) {
  const nlohmann::json json = nlohmann::json::parse(line, nullptr, false);
  if (!json.is_object() || !json.contains("loaded")) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a plugin report: '", line.substr(0, 200), "'"));
  }
  colltest::v1::KernelPlugin p;
  p.set_path(json.value("path", ""));
  p.set_sha256(json.value("sha256", ""));
  p.set_loaded(json.value("loaded", false));
  p.set_refused(json.value("refused", ""));
  p.set_name(json.value("name", ""));
  p.set_version(json.value("version", ""));
  p.set_variant(json.value("variant", ""));
  for (const auto& b : json.value("backends", nlohmann::json::array())) {
    p.add_backends(b.get<std::string>());
  }
  AddNames(json, "dtypes", common::ParseDTypeName, p.mutable_dtypes());
  AddNames(json, "epilogues", common::ParseEpilogueName, p.mutable_epilogues());
  for (const auto& w : json.value("world_sizes", nlohmann::json::array())) {
    p.add_world_sizes(w.get<uint32_t>());
  }
  p.set_graph_capture(json.value("graph_capture", false));
  p.set_max_elements(json.value("max_elements", uint64_t{0}));
  return p;
}

std::vector<colltest::v1::KernelPlugin> CheckKernelPlugins(const std::vector<std::string>& paths,
                                                           const PluginCheckFn& check) {
  std::vector<colltest::v1::KernelPlugin> plugins;
  std::map<std::string, std::string> loaded_names;  // name -> path
  for (const std::string& path : paths) {
    colltest::v1::KernelPlugin plugin = FromOutcome(path, check(path));
    if (plugin.loaded()) {
      auto [it, fresh] = loaded_names.emplace(plugin.name(), path);
      if (!fresh) {
        plugin.set_loaded(false);
        plugin.set_refused(
            absl::StrCat("name '", plugin.name(), "' is already the plugin ", it->second));
      }
    }
    plugins.push_back(std::move(plugin));
  }
  return plugins;
}

PluginCheckFn WorkerPluginCheck(const std::string& worker, const std::string& backend) {
  return [worker, backend](const std::string& path) {
    return RunWorkerCommandOutcome(worker, {"--check-plugin", path, "--backend", backend},
                                   kPluginCheckTimeout);
  };
}

}  // namespace colltest::server
