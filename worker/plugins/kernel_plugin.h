// Loading kernel plugins (docs/plugins.md): a shared library that exports colltest_kernel_v1 of
// include/colltest/kernel_plugin.h. A plugin is loaded only when its file passes plugin_file.h's
// owner and mode rules and its struct passes plugin_fields.h's; otherwise the report says why, and
// the worker goes on without it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "colltest/kernel_plugin.h"
#include "common/unique_fd.h"

namespace colltest::worker::plugins {

// What the worker says of one plugin it was given, loaded or not.
struct PluginReport {
  std::string path;
  std::string sha256;  // of the file; empty when it could not be read
  std::string name;    // the struct's fields, when the struct was read and its strings checked
  std::string version;
  uint32_t backends = 0;
  uint32_t dtypes = 0;
  uint32_t world_sizes = 0;
  uint32_t epilogues = 0;
  uint32_t flags = 0;
  uint64_t max_elements = 0;
  std::string refused;  // why it was not loaded; empty when it was
};

// A loaded plugin: the library stays mapped, and the struct valid, until this is destroyed.
class KernelPlugin {
 public:
  // `file` stays open while the library is loaded: it was loaded as /proc/self/fd/N, and the
  // dynamic loader takes a second library opened under a reused N for the first one.
  KernelPlugin(UniqueFd file, void* handle, const colltest_kernel_v1_t* kernel, PluginReport report)
      : file_(std::move(file)), handle_(handle), kernel_(kernel), report_(std::move(report)) {}
  ~KernelPlugin();
  KernelPlugin(const KernelPlugin&) = delete;
  KernelPlugin& operator=(const KernelPlugin&) = delete;

  const colltest_kernel_v1_t& kernel() const { return *kernel_; }
  const PluginReport& report() const { return report_; }

 private:
  UniqueFd file_;  // destroyed after the destructor's dlclose
  void* handle_;
  const colltest_kernel_v1_t* kernel_;
  PluginReport report_;
};

struct PluginLoad {
  std::unique_ptr<KernelPlugin> plugin;  // null when refused
  PluginReport report;
};

// Opens, checks and loads `path` for a worker of `backend` (a COLLTEST_BACKEND_* bit). Never
// fails: a plugin that cannot be loaded comes back with report.refused set.
PluginLoad LoadKernelPlugin(const std::string& path, uint32_t backend);

}  // namespace colltest::worker::plugins
