// The worker's half of "who else uses this GPU" (server/devices/device_users.h): the processes
// holding a device file open, found through /proc, and the `--users` line the controller reads.
// Plain C++ with no GPU library, so that every build has it and tests run anywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace colltest::worker {

struct DeviceUser {
  uint32_t device = 0;
  int64_t pid = 0;
  std::string name;           // "" when unreadable
  uint64_t memory_bytes = 0;  // 0 when unknown
};

// Every process with `path` open, in pid order. The same file under another name counts: files
// are compared by device and inode, device nodes by device number. Processes whose descriptors
// this one may not read (another user's, without CAP_SYS_PTRACE) are not seen. NOT_FOUND when
// `path` does not exist.
absl::StatusOr<std::vector<int64_t>> PidsWithFileOpen(const std::string& path,
                                                      const std::string& proc = "/proc");

// The process's command name (/proc/<pid>/comm); "" when unreadable: gone, or a pid of another
// pid namespace (NVML reports the host's pids to a process in a container).
std::string ProcessName(int64_t pid, const std::string& proc = "/proc");

// `{"backend":..,"source":..,"users":[{"device":..,"pid":..,"name":..,"memory_bytes":..}]}`, with
// "error" added when `error` is not empty (why the source is "none"; the controller only logs it).
std::string DeviceUsersJson(absl::string_view backend, absl::string_view source,
                            const std::vector<DeviceUser>& users, absl::string_view error = "");

}  // namespace colltest::worker
