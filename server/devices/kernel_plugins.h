// The kernel plugins colltestd was given (--kernel-plugin, --kernel-plugin-dir; docs/plugins.md),
// each checked by `colltest-worker --check-plugin PATH --backend B` in a process of its own: a
// plugin that crashes or hangs while it loads takes that process down, never colltestd, and is
// reported refused with the reason. colltestd itself never dlopens a plugin.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "colltest/v1/colltest.pb.h"
#include "server/devices/backend_probe.h"

namespace colltest::server {

// How long one plugin's check may take before it is killed and the plugin refused.
inline constexpr absl::Duration kPluginCheckTimeout = absl::Seconds(10);

// The plugins to check: every --kernel-plugin, then the *.so entries of `dir` sorted by name.
// `dir_given`: the folder came from --kernel-plugin-dir, so a folder that cannot be read is an
// error naming the flag; the default folder may be missing (no plugins installed).
absl::StatusOr<std::vector<std::string>> KernelPluginPaths(const std::vector<std::string>& paths,
                                                           const std::string& dir, bool dir_given);

// One line of --check-plugin output as a KernelPlugin; INVALID_ARGUMENT when it is not one.
absl::StatusOr<colltest::v1::KernelPlugin> ParsePluginReport(absl::string_view line);

using PluginCheckFn = std::function<absl::StatusOr<CommandOutcome>(const std::string& path)>;

// Checks every path with `check` (RunWorkerCommandOutcome of --check-plugin in colltestd), in
// order. A check that died, timed out or printed no report refuses its plugin saying so; a plugin
// whose name an earlier loaded plugin already has is refused naming that one.
std::vector<colltest::v1::KernelPlugin> CheckKernelPlugins(const std::vector<std::string>& paths,
                                                           const PluginCheckFn& check);

// The check colltestd runs: `worker --check-plugin PATH --backend backend`, kPluginCheckTimeout.
PluginCheckFn WorkerPluginCheck(const std::string& worker, const std::string& backend);

}  // namespace colltest::server
